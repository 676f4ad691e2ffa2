package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/internal/scram"
)

func TestSaslFlags(t *testing.T) {
	t.Parallel()
	users := filepath.Join(t.TempDir(), "users")
	c, err := parseConfig([]string{"--sasl-mechanisms", "scram-sha-512, PLAIN,PLAIN", "--sasl-users-file", users,
		"--sasl-session-lifetime", "1h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sasl.Mechanisms != "SCRAM-SHA-512,PLAIN" || c.Sasl.UsersFile != users || c.Sasl.SessionLifetime != time.Hour {
		t.Fatalf("%+v", c.Sasl)
	}
	c, err = parseConfig(nil, []string{"IGGY_KAFKA_SASL_MECHANISMS=PLAIN", "IGGY_KAFKA_SASL_USERS_FILE=" + users})
	if err != nil || c.Sasl.Mechanisms != "PLAIN" {
		t.Fatalf("from the environment: %+v %v", c.Sasl, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-mechanisms=GSSAPI", "--sasl-users-file=" + users}, "GSSAPI"},
		{[]string{"--sasl-mechanisms=PLAIN"}, "--sasl-users-file"},
		{[]string{"--sasl-users-file=" + users}, "--sasl-mechanisms is empty"},
		{[]string{"--sasl-session-lifetime=1h"}, "--sasl-mechanisms is empty"},
		{[]string{"--sasl-mechanisms=PLAIN", "--sasl-users-file=" + users, "--sasl-session-lifetime=10ms"}, "at least 1s"},
		{[]string{"--backend=iggy", "--sasl-mechanisms=SCRAM-SHA-256"}, "SCRAM on --backend iggy"},
	} {
		if _, err := parseConfig(tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	// PLAIN alone on the Iggy backend needs no users file: Iggy checks it.
	if _, err := parseConfig([]string{"--backend=iggy", "--sasl-mechanisms=PLAIN"}, nil); err != nil {
		t.Fatal(err)
	}
	// Off by default.
	if c, _ := parseConfig(nil, nil); c.Sasl != (gateway.SaslConfig{PermissionsTTL: 5 * time.Second}) {
		t.Fatalf("default %+v", c.Sasl)
	}
}

// `sasl-user add` writes a users file the gateway loads; the password
// comes from stdin and is not in the file.
func TestSaslUserAdd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users")
	var out, errOut bytes.Buffer
	if code := runSaslUser([]string{"add", "--file", path, "alice"}, strings.NewReader("s3cret\n"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := runSaslUser([]string{"add", "--file", path, "--mechanisms", "SCRAM-SHA-512", "--iterations", "8192", "bob"},
		strings.NewReader("pw2"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte("s3cret")) {
		t.Fatal("the password is in the file")
	}
	c, err := parseConfig([]string{"--sasl-mechanisms=PLAIN,SCRAM-SHA-256", "--sasl-users-file=" + path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.Sasl.Load(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cred, ok := sc.Users.Lookup("alice", scram.SHA256)
	if !ok || !cred.Verify("s3cret") {
		t.Fatal("alice's SHA-256 credential does not verify")
	}
	if cred, ok := sc.Users.Lookup("bob", scram.SHA512); !ok || cred.Iterations != 8192 || !cred.Verify("pw2") {
		t.Fatal("bob's SHA-512 credential")
	}
	for _, tc := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"add", "--file", path, "carol"}, ""},
		{[]string{"add", "carol"}, "pw"},
		{[]string{"add", "--file", path, "--iterations", "10", "carol"}, "pw"},
		{[]string{"add", "--file", path, "--mechanisms", "MD5", "carol"}, "pw"},
		{[]string{"remove", "carol"}, "pw"},
	} {
		if code := runSaslUser(tc.args, strings.NewReader(tc.stdin), io.Discard, io.Discard); code == 0 {
			t.Errorf("%v with stdin %q succeeded", tc.args, tc.stdin)
		}
	}
	// A damaged file stops the gateway at startup.
	if err := os.WriteFile(path, []byte("alice SCRAM-SHA-256 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sasl.Load(slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("damaged file: %v", err)
	}
}
