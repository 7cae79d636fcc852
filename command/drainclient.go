package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/flagenv"
)

// drainTimeout bounds `slotgate drain`: the drain endpoint answers at
// once and does the waiting in-process.
const drainTimeout = 5 * time.Second

// runDrain is `slotgate drain`: it asks the slotgate of this pod to drain,
// with POST /drain on its admin port and the bearer token of
// --admin-token-file when one is set. It reads the same flags and
// environment as slotgate itself, so that a Kubernetes preStop hook
// (`exec: ["/slotgate", "drain"]`) in slotgate's own container needs
// nothing more: kubelet's httpGet hooks can only GET, and a distroless
// image has no curl. It returns 0 once the drain has begun, 1 when the
// call failed, 2 for a configuration refused.
func runDrain(args []string, env map[string]string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, env)
	if err != nil {
		flagenv.Report(stderr, "slotgate drain", err)
		return 2
	}
	u, err := adminURL(cfg.AdminListen)
	if err != nil {
		fmt.Fprintf(stderr, "slotgate drain: %s %q: %v\n", flagName(cfg, "admin-listen"), cfg.AdminListen, err)
		return 2
	}
	req, err := http.NewRequest(http.MethodPost, u+"/drain", nil)
	if err != nil {
		fmt.Fprintln(stderr, "slotgate drain: "+err.Error())
		return 2
	}
	if cfg.AdminTokenFile != "" {
		b, err := os.ReadFile(cfg.AdminTokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "slotgate drain: %s: %v\n", flagName(cfg, "admin-token-file"), err)
			return 2
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req.WithContext(ctx))
	if err != nil {
		fmt.Fprintln(stderr, "slotgate drain: "+err.Error())
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusAccepted {
		fmt.Fprintf(stderr, "slotgate drain: %s answered %s: %s\n", u, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "slotgate drain: %s: draining\n", u)
	return 0
}

// adminURL is the admin port's URL as seen from inside the pod: an
// address bound to every interface (":9090", "0.0.0.0:9090", "[::]:9090")
// is reached on the loopback.
func adminURL(listen string) (string, error) {
	if listen == "" {
		return "", errors.New("no admin address")
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
