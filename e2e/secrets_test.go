package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
)

// The binary's admin listeners given as :port bind loopback only, and
// /debug/pprof/cmdline, the log and the metrics never show the Iggy
// password or token given on the command line (the log warns about it).
func TestBinaryPprofRedactsPassword(t *testing.T) {
	t.Parallel()
	const pw, tok = "hunter2-pw-secret", "tok-secret-9f3a"
	mport, pport := freePort(t), freePort(t)
	gw := spawnGateway(t, t.TempDir(),
		"--backend=embedded", "--data-dir="+t.TempDir(), // the secrets are only parsed
		"--iggy-password", pw, "-iggy-token="+tok,
		fmt.Sprintf("--metrics-addr=:%d", mport), fmt.Sprintf("--pprof-addr=:%d", pport))

	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/cmdline", pport))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, pw) || strings.Contains(body, tok) {
		t.Fatalf("/debug/pprof/cmdline shows a secret: %q", body)
	}
	if !strings.Contains(body, "<redacted>") || !strings.Contains(body, "--iggy-password") {
		t.Fatalf("/debug/pprof/cmdline = %q, want the flags with <redacted> values", body)
	}
	metrics, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(metrics, pw) || strings.Contains(metrics, tok) {
		t.Fatal("/metrics shows a secret")
	}
	// Not on any other interface.
	if ip := nonLoopbackIP(); ip != "" {
		for _, port := range []int{mport, pport} {
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), time.Second); err == nil {
				c.Close()
				t.Fatalf("an admin listener given as :%d is reachable on %s", port, ip)
			}
		}
	} else {
		t.Log("no non-loopback address on this machine; checked the bound address in the log only")
	}
	gw.Stop()
	log := gw.Log()
	if strings.Contains(log, pw) || strings.Contains(log, tok) {
		t.Fatal("the log shows a secret")
	}
	for _, want := range []string{
		"a secret was given on the command line",
		fmt.Sprintf("addr=127.0.0.1:%d", mport), fmt.Sprintf("addr=127.0.0.1:%d", pport),
		"listening on loopback only",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// An admin listener on every interface is served but warned about.
func TestBinaryPprofExposedWarns(t *testing.T) {
	t.Parallel()
	pport := freePort(t)
	gw := spawnGateway(t, t.TempDir(), fmt.Sprintf("--pprof-addr=0.0.0.0:%d", pport))
	if _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pport)); err != nil {
		t.Fatal(err)
	}
	gw.Stop()
	if !strings.Contains(gw.Log(), "pprof listener is reachable beyond this host") {
		t.Fatalf("no warning for pprof on 0.0.0.0; log:\n%s", tail(gw.Log(), 30))
	}
}

// --iggy-password-file logs the gateway in with the file's password (an
// Iggy server that accepts only it), and a wrong file is a startup failure
// that does not print what the file holds.
func TestBinaryPasswordFile(t *testing.T) {
	t.Parallel()
	inner, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	srv, err := iggytest.Start(inner, iggytest.Options{Username: "gw-user", Password: "file-pw-31337"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("file-pw-31337\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("wrong-pw-4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	gw := spawnGateway(t, t.TempDir(), "--backend=iggy", "--iggy-addr="+srv.Addr(),
		"--iggy-username=gw-user", "--iggy-password-file="+good)
	cl := clientWithTopic(t, gw.Addr, "pwfile", 1)
	want := produceAll(t, cl, testRecords("pwfile", 5))
	sameRecs(t, want, consumeN(t, gw.Addr, "pwfile", len(want), within(20*time.Second)))
	cl.Close()
	gw.Stop()
	if strings.Contains(gw.Log(), "file-pw-31337") {
		t.Fatal("the log shows the password from the file")
	}

	cmd := exec.Command(gatewayBinary(t), "--backend=iggy", "--iggy-addr="+srv.Addr(), "--iggy-username=gw-user",
		"--iggy-password-file="+bad, "--iggy-call-timeout-ms=2000",
		"--bind-addr=127.0.0.1:"+strconv.Itoa(freePort(t)))
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("wrong password file: err %v, output %q; want exit 1", err, out)
	}
	if strings.Contains(string(out), "wrong-pw-4242") {
		t.Fatalf("the startup failure prints the password: %q", out)
	}
}

// nonLoopbackIP returns an IPv4 address of this machine that is not
// loopback, or "".
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
