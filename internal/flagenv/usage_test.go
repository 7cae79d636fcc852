package flagenv_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/internal/flagenv"
)

func TestWriteUsage(t *testing.T) {
	var r raw
	var b strings.Builder
	err := flagenv.WriteUsage(&b, "Usage: t\n\n", flagenv.MustSettings(&r), flagenv.Setting{Flag: "version", Usage: "print the version"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Usage: t\n\n" +
		"FLAG       ENVIRONMENT  DEFAULT  MEANING\n" +
		"--listen   T_LISTEN     :8080    address\n" +
		"--limit    T_LIMIT      (unset)  no default\n" +
		"--stream   T_STREAM     true     a switch\n" +
		"--version                        print the version\n"
	if got := b.String(); got != want {
		t.Errorf("WriteUsage wrote\n%s\nwant\n%s", got, want)
	}
}

func TestAddVersion(t *testing.T) {
	var r raw
	var version bool
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	flagenv.AddVersion(fs, &version)
	if _, err := flagenv.Parse(fs, &r, []string{"--version"}, nil); err != nil || !version {
		t.Fatalf("Parse: %v, version = %v", err, version)
	}
	if row := flagenv.VersionRow(); row.Flag != "version" || row.Usage != fs.Lookup("version").Usage {
		t.Errorf("VersionRow() = %+v, want the flag's name and usage", row)
	}
}
