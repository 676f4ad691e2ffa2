package main

// SASL settings (--sasl-*) into gateway.SaslConfig, and the `sasl-user`
// subcommand that writes the users file. The gateway package builds the
// handlers' SASL from them (gateway/sasl.go); docs/SECURITY.md describes
// all of it.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/scram"
)

func saslOptions(c *config) []option {
	return []option{
		{flag: "sasl-mechanisms", defText: "off",
			usage: "SASL mechanisms of the SASL_PLAINTEXT/SASL_SSL listeners, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; without --listeners it makes the one listener SASL_PLAINTEXT (empty: no authentication); docs/SECURITY.md",
			set:   func(v string) error { return setMechanisms(&c.Sasl, v) }},
		{flag: "sasl-users-file", defText: "none",
			usage: "file of SASL users as salted SCRAM credentials (no passwords), written by `iggy-kafka-gateway sasl-user add`",
			set:   text(&c.Sasl.UsersFile)},
		{flag: "sasl-session-lifetime", defText: "0 (never expires)",
			usage: "KIP-368 session lifetime (e.g. 1h): a client must re-authenticate within it or its connection is closed",
			set: durationFrom(time.Second, "want a duration like 30m or 1h, or 0", "never expires",
				to(&c.Sasl.SessionLifetime))},
		{flag: "iggy-permissions-ttl", def: "5s",
			usage: "--backend iggy with SASL PLAIN: a PLAIN client is the Iggy user it logged in as, and that user's Iggy permissions bound what it may do beside the ACLs; this is how soon a change in Iggy applies (the gateway's Iggy user needs read_users). 0: off, ACLs only",
			set: durationFrom(100*time.Millisecond, "want a duration like 5s, or 0 (off)", "off",
				to(&c.Sasl.PermissionsTTL))},
	}
}

// setMechanisms validates v, drops repeats and keeps the order given.
func setMechanisms(s *gateway.SaslConfig, v string) error {
	var out []string
	seen := map[string]bool{}
	for _, m := range listItems(v, ",") {
		m = strings.ToUpper(m)
		if seen[m] {
			continue
		}
		switch m {
		case handlers.MechPlain, handlers.MechScramSHA256, handlers.MechScramSHA512:
		default:
			return fmt.Errorf("mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
		seen[m] = true
		out = append(out, m)
	}
	s.Mechanisms = strings.Join(out, ",")
	return nil
}

// scramOn reports whether a SCRAM mechanism is among mechs (comma-separated).
func scramOn(mechs string) bool {
	return strings.Contains(mechs, "SCRAM-")
}

// resolveSasl checks the SASL settings against each other and the backend.
func (c *config) resolveSasl() error {
	s := &c.Sasl
	if s.Mechanisms == "" {
		if s.UsersFile != "" {
			return errors.New("--sasl-users-file is set but --sasl-mechanisms is empty: name the mechanisms to turn SASL on")
		}
		if s.SessionLifetime != 0 {
			return errors.New("--sasl-session-lifetime is set but --sasl-mechanisms is empty")
		}
		return nil
	}
	if s.UsersFile == "" && (c.Store.Kind != "iggy" || scramOn(s.Mechanisms)) {
		if c.Store.Kind == "iggy" {
			return errors.New("SCRAM on --backend iggy needs --sasl-users-file (the gateway keeps SCRAM credentials; PLAIN is checked by Iggy)")
		}
		return errors.New("--sasl-mechanisms needs --sasl-users-file on the embedded backend (create it with `iggy-kafka-gateway sasl-user add NAME`)")
	}
	return nil
}

// runSaslUser is `iggy-kafka-gateway sasl-user add|remove ...`.
func runSaslUser(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprint(stderr, `usage: iggy-kafka-gateway sasl-user add --file PATH [--mechanisms SCRAM-SHA-256,SCRAM-SHA-512] [--iterations 4096] NAME
  reads the password from stdin (its first line) and writes NAME's salted
  SCRAM credentials to PATH (created 0600 if missing; NAME's old entries for
  those mechanisms are replaced). The gateway reads the file at startup
  (--sasl-users-file); PLAIN is checked against the same entries.
`)
	}
	if len(args) == 0 || args[0] != "add" {
		usage()
		return 2
	}
	fs := flag.NewFlagSet("sasl-user add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usage
	file := fs.String("file", "", "users file")
	mechs := fs.String("mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "mechanisms")
	iters := fs.Int("iterations", scram.DefaultIterations, "PBKDF2 iterations")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() != 1 {
		usage()
		return 2
	}
	name := fs.Arg(0)
	if *iters < scram.MinIterations || *iters > scram.MaxIterations {
		fmt.Fprintf(stderr, "sasl-user: --iterations %d: want %d..%d\n", *iters, scram.MinIterations, scram.MaxIterations)
		return 2
	}
	var ms []scram.Mechanism
	for _, m := range strings.Split(*mechs, ",") {
		mm, ok := scram.ParseMechanism(strings.ToUpper(strings.TrimSpace(m)))
		if !ok {
			fmt.Fprintf(stderr, "sasl-user: mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512\n", m)
			return 2
		}
		ms = append(ms, mm)
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "sasl-user: reading the password: %v\n", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		fmt.Fprintln(stderr, "sasl-user: empty password on stdin")
		return 2
	}
	if err := scram.SetUser(*file, name, pw, ms, *iters); err != nil {
		fmt.Fprintf(stderr, "sasl-user: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: set %s for %s\n", *file, *mechs, name)
	return 0
}
