package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
)

// The binary serves Prometheus metrics and pprof on the addresses asked
// for, and the request counters move with client traffic.
func TestBinaryMetricsAndPprof(t *testing.T) {
	t.Parallel()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	gw := spawnGateway(t, t.TempDir(), "--metrics-addr="+metricsAddr, "--pprof-addr="+pprofAddr)
	cl := clientWithTopic(t, gw.Addr, "metered", 1)
	want := produceAll(t, cl, testRecords("metered", 50))
	consumeN(t, gw.Addr, "metered", len(want))

	produced := regexp.MustCompile(`(?m)^iggy_kafka_requests_total\{api="Produce",outcome="ok"\} (\d+)`)
	await.Until(t, 10*time.Second, func() error {
		body, err := httpGet("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		m := produced.FindStringSubmatch(body)
		if m == nil {
			return errors.New("no Produce ok counter in /metrics")
		}
		if n, _ := strconv.Atoi(m[1]); n < 1 {
			return fmt.Errorf("Produce ok = %d", n)
		}
		for _, name := range []string{"iggy_kafka_received_bytes_total", "iggy_kafka_connections_open", "go_goroutines"} {
			if !strings.Contains(body, name) {
				return fmt.Errorf("/metrics lacks %s", name)
			}
		}
		return nil
	})
	if body, err := httpGet("http://" + pprofAddr + "/debug/pprof/"); err != nil || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: err %v", err)
	}
	gw.Stop()
}

// httpGet GETs url (within 5 s) and returns the body of a 200 answer.
func httpGet(url string) (string, error) {
	code, body, err := httpStatus(url)
	if err == nil && code != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", url, code)
	}
	return body, err
}

// httpStatus GETs url (within 5 s): the status code and the body,
// whatever the status.
func httpStatus(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Startup errors from the real binary: exit code 2 and a message naming
// the variable or flag.
func TestBinaryRejectsBadConfig(t *testing.T) {
	t.Parallel()
	bin := gatewayBinary(t)
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{env: []string{"IGGY_KAFKA_MAX_CONECTIONS=5"}, want: "IGGY_KAFKA_MAX_CONECTIONS"},
		{env: []string{"IGGY_KAFKA_FSYNC=sometimes"}, want: "IGGY_KAFKA_FSYNC"},
		{args: []string{"--backend=sqlite"}, want: "-backend"},
		{args: []string{"--bind-addr=0.0.0.0:9092"}, want: "--advertised-host"},
	}
	for _, c := range cases {
		cmd := exec.Command(bin, append([]string{"--data-dir=" + t.TempDir()}, c.args...)...)
		cmd.Env = append(childEnv(), c.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("env %v args %v: err %v, output %q; want exit 2 naming %q", c.env, c.args, err, out, c.want)
		}
	}
}

// An Iggy server that cannot be reached at startup is fatal (exit 1) with a
// message naming the address and the user: never a silent fallback.
func TestBinaryIggyUnreachableIsFatal(t *testing.T) {
	t.Parallel()
	bin := gatewayBinary(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))) // nothing listens there
	cmd := exec.Command(bin, "--backend=iggy", "--iggy-addr="+addr, "--iggy-username=kafka-gw",
		"--iggy-call-timeout-ms=2000", "--bind-addr=127.0.0.1:"+strconv.Itoa(freePort(t)))
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), addr) ||
		!strings.Contains(string(out), "kafka-gw") {
		t.Fatalf("err %v, output %q; want exit 1 naming %s and the user", err, out, addr)
	}
}
