package main

// SASL settings (--sasl-*), the handlers.SaslConfig built from them, the
// PLAIN check against Iggy, and the `sasl-user` subcommand that writes the
// users file. docs/SECURITY.md describes all of it.

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// saslConfig is the --sasl-* part of config.
type saslConfig struct {
	// Mechanisms is the validated, deduplicated list in the given order,
	// comma-joined (a string keeps config comparable).
	Mechanisms      string
	UsersFile       string
	SessionLifetime time.Duration
	// PermissionsTTL bounds how stale the Iggy permissions of a PLAIN
	// user may get on the Iggy backend; 0 turns them off (ACLs only).
	PermissionsTTL time.Duration
}

func saslOptions() []option {
	return []option{
		{flag: "sasl-mechanisms", defText: "off",
			usage: "SASL mechanisms of the SASL_PLAINTEXT/SASL_SSL listeners, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; without --listeners it makes the one listener SASL_PLAINTEXT (empty: no authentication); docs/SECURITY.md",
			set:   func(c *config, v string) error { return c.Sasl.setMechanisms(v) }},
		{flag: "sasl-users-file", defText: "none",
			usage: "file of SASL users as salted SCRAM credentials (no passwords), written by `iggy-kafka-gateway sasl-user add`",
			set:   func(c *config, v string) error { c.Sasl.UsersFile = v; return nil }},
		{flag: "sasl-session-lifetime", defText: "0 (never expires)",
			usage: "KIP-368 session lifetime (e.g. 1h): a client must re-authenticate within it or its connection is closed",
			set: func(c *config, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 {
					return errors.New("want a duration like 30m or 1h, or 0")
				}
				if d != 0 && d < time.Second {
					return errors.New("want at least 1s (or 0: never expires)")
				}
				c.Sasl.SessionLifetime = d
				return nil
			}},
		{flag: "iggy-permissions-ttl", def: "5s",
			usage: "--backend iggy with SASL PLAIN: a PLAIN client is the Iggy user it logged in as, and that user's Iggy permissions bound what it may do beside the ACLs; this is how soon a change in Iggy applies (the gateway's Iggy user needs read_users). 0: off, ACLs only",
			set: func(c *config, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 {
					return errors.New("want a duration like 5s, or 0 (off)")
				}
				if d != 0 && d < 100*time.Millisecond {
					return errors.New("want at least 100ms (or 0: off)")
				}
				c.Sasl.PermissionsTTL = d
				return nil
			}},
	}
}

func (s *saslConfig) setMechanisms(v string) error {
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(v, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m == "" || seen[m] {
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

// list is the mechanisms as a slice (nil: SASL off).
func (s *saslConfig) list() []string {
	if s.Mechanisms == "" {
		return nil
	}
	return strings.Split(s.Mechanisms, ",")
}

func (s *saslConfig) scram() bool {
	for _, m := range s.list() {
		if strings.HasPrefix(m, "SCRAM-") {
			return true
		}
	}
	return false
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
	if s.UsersFile == "" && (c.Backend != "iggy" || s.scram()) {
		if c.Backend == "iggy" {
			return errors.New("SCRAM on --backend iggy needs --sasl-users-file (the gateway keeps SCRAM credentials; PLAIN is checked by Iggy)")
		}
		return errors.New("--sasl-mechanisms needs --sasl-users-file on the embedded backend (create it with `iggy-kafka-gateway sasl-user add NAME`)")
	}
	return nil
}

// buildSasl returns the handlers' SASL configuration, or nil when SASL is
// off. The users file is read once, here: a change needs a restart.
func buildSasl(cfg config, log *slog.Logger, store *bridge.Guarded) (*handlers.SaslConfig, error) {
	s := cfg.Sasl
	if s.Mechanisms == "" {
		return nil, nil
	}
	sc := &handlers.SaslConfig{Mechanisms: s.list(), SessionLifetime: s.SessionLifetime}
	if s.UsersFile != "" {
		u, err := scram.LoadFile(s.UsersFile)
		if err != nil {
			return nil, fmt.Errorf("--sasl-users-file: %w", err)
		}
		if u.Len() == 0 {
			log.Warn("the SASL users file has no users: every login will fail", "file", s.UsersFile)
		}
		sc.Users = u
	}
	if cfg.Backend == "iggy" {
		p := newIggyPlain(cfg)
		if st, ok := guardedIggy(store); ok && s.PermissionsTTL > 0 && slices.Contains(s.list(), handlers.MechPlain) {
			// Re-reading a user's permissions needs read_users: find out
			// now rather than refuse every PLAIN client a TTL after start.
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Iggy.CallTimeout)
			_, _, err := st.Client().GetUser(ctx, iggy.ID(0))
			cancel()
			if errors.Is(err, iggy.ErrUnauthorized) {
				return nil, fmt.Errorf("--iggy-permissions-ttl: the gateway's Iggy user %q may not read users (give it read_users, or set --iggy-permissions-ttl=0 for ACLs only)", cfg.Iggy.Username)
			}
			if err != nil {
				return nil, fmt.Errorf("--iggy-permissions-ttl: reading a user from Iggy: %w", err)
			}
			p.perms = iggy.NewPermissionCache(st.Client(), s.PermissionsTTL, log)
			sc.Permissions = p.perms
			log.Info("Iggy permissions of PLAIN users on", "ttl", s.PermissionsTTL)
		}
		sc.Plain = p.check
	}
	log.Info("SASL on", "mechanisms", s.Mechanisms, "users_file", s.UsersFile,
		"session_lifetime", s.SessionLifetime)
	return sc, nil
}

// guardedIggy returns the Iggy store under g, if that is the backend.
func guardedIggy(g *bridge.Guarded) (*iggy.Store, bool) {
	if g == nil {
		return nil, false
	}
	st, ok := g.Inner().(*iggy.Store)
	return st, ok
}

// iggyPlain checks PLAIN by logging in to Iggy as that user on a fresh
// connection, and remembers a success for plainCacheTTL so a client that
// opens many connections does not cost a login each. Only successes are
// kept, under an HMAC of the password with a per-process key, never the
// password.
type iggyPlain struct {
	opts iggy.Options
	key  [32]byte
	// perms, when set, learns each checked user's permissions from its
	// own login (the login connection reads the user itself).
	perms *iggy.PermissionCache

	mu    sync.Mutex
	cache map[string]plainEntry
}

type plainEntry struct {
	mac     [sha256.Size]byte
	expires time.Time
}

const (
	plainCacheTTL = 30 * time.Second
	plainCacheMax = 4096
)

func newIggyPlain(cfg config) *iggyPlain {
	ic := cfg.Iggy
	p := &iggyPlain{
		opts: iggy.Options{Addr: ic.Addr, CallTimeout: ic.CallTimeout,
			TLS: ic.TLS || ic.TLSCAFile != "", TLSCAFile: ic.TLSCAFile, TLSServerName: ic.TLSServerName,
			TLSInsecureSkipVerify: ic.TLSInsecureSkipVerify},
		cache: map[string]plainEntry{},
	}
	_, _ = rand.Read(p.key[:])
	return p
}

func (p *iggyPlain) mac(user, password string) (out [sha256.Size]byte) {
	h := hmac.New(sha256.New, p.key[:])
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(password))
	h.Sum(out[:0])
	return out
}

// check runs on a worker (handlers.PlainChecker); ctx carries the deadline.
func (p *iggyPlain) check(ctx context.Context, user, password string) (bool, error) {
	m := p.mac(user, password)
	now := time.Now()
	p.mu.Lock()
	e, hit := p.cache[user]
	p.mu.Unlock()
	if hit && now.Before(e.expires) && hmac.Equal(e.mac[:], m[:]) {
		return true, nil
	}
	var ok bool
	var err error
	if p.perms != nil {
		var u iggy.User
		if u, ok, err = iggy.CheckLoginUser(ctx, p.opts, user, password); ok && err == nil {
			p.perms.Learn(u)
		}
	} else {
		ok, err = iggy.CheckLogin(ctx, p.opts, user, password)
	}
	if err != nil || !ok {
		if hit {
			p.mu.Lock()
			delete(p.cache, user)
			p.mu.Unlock()
		}
		return ok, err
	}
	p.mu.Lock()
	if len(p.cache) >= plainCacheMax {
		clear(p.cache)
	}
	p.cache[user] = plainEntry{mac: m, expires: now.Add(plainCacheTTL)}
	p.mu.Unlock()
	return true, nil
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
