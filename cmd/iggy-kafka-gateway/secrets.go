package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Secrets (the Iggy password and token) come from a variable, a file or,
// with a warning, a flag. Their values are never printed: parse errors say
// <redacted>, /debug/pprof/cmdline serves a redacted command line, and no
// log line or config dump carries them. The process's own command line
// (/proc/PID/cmdline, ps) cannot be rewritten from Go, hence the warning.

const redacted = "<redacted>"

// maxSecretFile bounds what a secret file may hold; Iggy caps a password
// or token at 255 bytes.
const maxSecretFile = 4096

// readSecretFiles loads --iggy-password-file, --iggy-token-file and
// --delegation-token-secret-key-file, and refuses a secret given both as
// a value and as a file.
func (c *config) readSecretFiles() error {
	load := func(path, flagName, valueFlag string, valueGiven bool, dst *string) error {
		if path == "" {
			return nil
		}
		if valueGiven {
			return fmt.Errorf("--%s and --%s (or %s) both set: give the secret once",
				flagName, valueFlag, envName(valueFlag))
		}
		v, err := readSecretFile(path)
		if err != nil {
			return fmt.Errorf("--%s: %v", flagName, err)
		}
		*dst = v
		return nil
	}
	if err := load(c.iggyPasswordFile, "iggy-password-file", "iggy-password", c.secretsSet.password, &c.Store.Iggy.Password); err != nil {
		return err
	}
	if err := load(c.iggyTokenFile, "iggy-token-file", "iggy-token", c.secretsSet.token, &c.Store.Iggy.Token); err != nil {
		return err
	}
	var tokenSecret string
	if err := load(c.tokenSecretFile, "delegation-token-secret-key-file", "delegation-token-secret-key", c.secretsSet.tokenSecret, &tokenSecret); err != nil {
		return err
	}
	if tokenSecret != "" {
		c.Handlers.Tokens.Secret = []byte(tokenSecret)
	}
	return nil
}

// readSecretFile returns the file's content without a trailing newline.
// Errors name the path, never the content.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading %s: %v", path, err)
	case len(b) > maxSecretFile:
		return "", fmt.Errorf("%s is over %d bytes; it should hold one secret", path, maxSecretFile)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// secretFlags are the names of the options whose values are secret.
func secretFlags() map[string]bool {
	m := make(map[string]bool)
	for _, o := range options() {
		if o.secret {
			m[o.flag] = true
		}
	}
	return m
}

// redactArgs returns args with the value of every secret flag replaced,
// in each spelling the flag package accepts: -f=v, --f=v, and -f v.
func redactArgs(args []string) []string {
	secret := secretFlags()
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") || a == "--" {
			if a == "--" {
				break // the flag package stops here
			}
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, _, ok := strings.Cut(name, "="); ok {
			if secret[k] {
				out[i] = a[:strings.Index(a, "=")+1] + redacted
			}
			continue
		}
		if secret[name] && i+1 < len(out) {
			out[i+1] = redacted
			i++
		}
	}
	return out
}

// pprofCmdline serves what net/http/pprof's Cmdline does (the arguments,
// NUL-separated) with secret values redacted. Any goroutine.
func pprofCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redactArgs(os.Args), "\x00"))
}
