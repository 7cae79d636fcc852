package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/slotgate/slotgate/loadgen"
)

// output is where the report goes: the table on stdout unless the JSON goes
// there, and the JSON to its file, opened before the run so that a bad
// path fails before the load, not after it.
type output struct {
	table bool
	json  io.Writer
	file  *os.File // the JSON file; nil for none or stdout
	path  string
}

func openOutput(path string, stdout io.Writer) (*output, error) {
	switch path {
	case "":
		return &output{table: true}, nil
	case "-":
		return &output{json: stdout}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--json: %w", err)
	}
	return &output{table: true, json: f, file: f, path: path}, nil
}

// write writes the report and closes the JSON file, returning every
// failure.
func (o *output) write(r loadgen.Report, stdout io.Writer) error {
	var errs []error
	if o.table {
		if err := r.WriteTable(stdout); err != nil {
			errs = append(errs, err)
		}
	}
	if o.json != nil {
		if err := r.WriteJSON(o.json); err != nil {
			errs = append(errs, err)
		}
	}
	if o.file != nil {
		if err := o.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--json %s: %w", o.path, err))
		}
	}
	return errors.Join(errs...)
}
