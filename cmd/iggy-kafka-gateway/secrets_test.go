package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRedactArgs(t *testing.T) {
	t.Parallel()
	in := []string{"gw", "--iggy-password=hunter2", "-iggy-token", "tok123", "--iggy-username=u",
		"--iggy-password", "pw2", "--iggy-token=", "--stream=s", "--", "--iggy-password=after-dashdash"}
	want := []string{"gw", "--iggy-password=" + redacted, "-iggy-token", redacted, "--iggy-username=u",
		"--iggy-password", redacted, "--iggy-token=" + redacted, "--stream=s", "--", "--iggy-password=after-dashdash"}
	if got := redactArgs(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("redactArgs:\n got %q\nwant %q", got, want)
	}
	if in[1] != "--iggy-password=hunter2" {
		t.Fatal("redactArgs changed its input")
	}
}

// /debug/pprof/cmdline serves the arguments NUL-separated, as
// net/http/pprof does, without the secrets.
func TestPprofCmdlineRedacted(t *testing.T) {
	// Not parallel: it replaces os.Args.
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = []string{"iggy-kafka-gateway", "--iggy-password=hunter2", "--iggy-token", "tok123", "--pprof-addr=:6060"}
	rec := httptest.NewRecorder()
	pprofCmdline(rec, httptest.NewRequest("GET", "/debug/pprof/cmdline", nil))
	body := rec.Body.String()
	if strings.Contains(body, "hunter2") || strings.Contains(body, "tok123") {
		t.Fatalf("cmdline shows a secret: %q", body)
	}
	if want := "iggy-kafka-gateway\x00--iggy-password=" + redacted + "\x00--iggy-token\x00" + redacted + "\x00--pprof-addr=:6060"; body != want {
		t.Fatalf("cmdline %q, want %q", body, want)
	}
}

func TestPasswordSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("tok-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c, err := parseConfig([]string{"--iggy-password-file=" + pwFile, "--iggy-token-file", tokFile}, nil)
	if err != nil || c.Store.Iggy.Password != "from-file" || c.Store.Iggy.Token != "tok-file" || c.SecretFlagsOnCmdline != "" {
		t.Fatalf("files: %+v %v", c.Store.Iggy, err)
	}
	c, err = parseConfig(nil, []string{"IGGY_KAFKA_IGGY_PASSWORD_FILE=" + pwFile})
	if err != nil || c.Store.Iggy.Password != "from-file" {
		t.Fatalf("file by variable: %q %v", c.Store.Iggy.Password, err)
	}
	c, err = parseConfig(nil, []string{"IGGY_KAFKA_IGGY_PASSWORD=from-env"})
	if err != nil || c.Store.Iggy.Password != "from-env" || c.SecretFlagsOnCmdline != "" {
		t.Fatalf("variable: %q %q %v", c.Store.Iggy.Password, c.SecretFlagsOnCmdline, err)
	}
	c, err = parseConfig([]string{"--iggy-password=on-cmdline", "--iggy-token=t"}, nil)
	if err != nil || c.Store.Iggy.Password != "on-cmdline" || c.SecretFlagsOnCmdline != "--iggy-password --iggy-token" {
		t.Fatalf("flag: %q %q %v", c.Store.Iggy.Password, c.SecretFlagsOnCmdline, err)
	}
	for _, bad := range []struct {
		args, env []string
		want      string
	}{
		{args: []string{"--iggy-password=x", "--iggy-password-file=" + pwFile}, want: "give the secret once"},
		{env: []string{"IGGY_KAFKA_IGGY_PASSWORD=x"}, args: []string{"--iggy-password-file=" + pwFile}, want: "IGGY_KAFKA_IGGY_PASSWORD"},
		{args: []string{"--iggy-password-file=" + filepath.Join(dir, "missing")}, want: "--iggy-password-file"},
		{args: []string{"--iggy-token-file=" + empty}, want: "is empty"},
	} {
		_, err := parseConfig(bad.args, bad.env)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("args %v env %v: err %v, want %q", bad.args, bad.env, err, bad.want)
		}
		if err != nil && strings.Contains(err.Error(), "from-file") {
			t.Errorf("error shows the file's secret: %v", err)
		}
	}
}

func TestLimitFlags(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]string{"--max-connections-per-addr=3", "--frame-timeout-ms=250",
		"--auto-create-max-per-request=2", "--auto-create-per-sec=1"}, nil)
	if err != nil || c.Loop.MaxConnectionsPerAddr != 3 || c.Loop.FrameTimeout != 250*time.Millisecond ||
		c.Handlers.AutoCreatePerRequest != 2 || c.Handlers.AutoCreatePerSec != 1 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"--max-connections-per-addr=0", "--frame-timeout-ms=0",
		"--auto-create-max-per-request=0", "--auto-create-per-sec=0"} {
		if _, err := parseConfig([]string{bad}, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
