package gateway

// SASL: the handlers.SaslConfig built from SaslConfig, and on the Iggy
// backend the PLAIN check against Iggy and the Iggy permissions of PLAIN
// users. docs/SECURITY.md describes all of it.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
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

// SaslConfig turns SASL on for the SASL_PLAINTEXT and SASL_SSL listeners
// (used when Config.Handlers.Sasl is nil).
type SaslConfig struct {
	// Mechanisms, comma-separated in the order SaslHandshake lists them
	// (a string keeps the config comparable); "": SASL off.
	Mechanisms      string
	UsersFile       string // SCRAM credentials, written by `iggy-kafka-gateway sasl-user add`
	SessionLifetime time.Duration
	// PermissionsTTL bounds how stale the Iggy permissions of a PLAIN
	// user may get on the Iggy backend; 0 turns them off (ACLs only).
	PermissionsTTL time.Duration
}

// List is the mechanisms as a slice (nil: SASL off).
func (s SaslConfig) List() []string {
	if s.Mechanisms == "" {
		return nil
	}
	return strings.Split(s.Mechanisms, ",")
}

// Load returns the handlers' SASL configuration without the Iggy parts
// (Start adds those on the Iggy backend), or nil when SASL is off. The
// users file is read once, here: a change needs a restart.
func (s SaslConfig) Load(log *slog.Logger) (*handlers.SaslConfig, error) {
	if s.Mechanisms == "" {
		return nil, nil
	}
	sc := &handlers.SaslConfig{Mechanisms: s.List(), SessionLifetime: s.SessionLifetime}
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
	return sc, nil
}

// buildSasl returns the handlers' SASL configuration, or nil when SASL is
// off. On the Iggy backend PLAIN is checked by logging in to Iggy.
func buildSasl(ctx context.Context, cfg Config, log *slog.Logger, store *bridge.Guarded) (*handlers.SaslConfig, error) {
	s := cfg.Sasl
	sc, err := s.Load(log)
	if sc == nil || err != nil {
		return sc, err
	}
	if cfg.Store.iggy() {
		p := newIggyPlain(cfg.Store.Iggy)
		if st, ok := guardedIggy(store); ok && s.PermissionsTTL > 0 && slices.Contains(s.List(), handlers.MechPlain) {
			// Re-reading a user's permissions needs read_users: find out
			// now rather than refuse every PLAIN client a TTL after start.
			ctx, cancel := context.WithTimeout(ctx, cfg.Store.Iggy.CallTimeout)
			_, _, err := st.Client().GetUser(ctx, iggy.ID(0))
			cancel()
			if errors.Is(err, iggy.ErrUnauthorized) {
				return nil, fmt.Errorf("--iggy-permissions-ttl: the gateway's Iggy user %q may not read users (give it read_users, or set --iggy-permissions-ttl=0 for ACLs only)", cfg.Store.Iggy.Username)
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

func newIggyPlain(ic IggyConfig) *iggyPlain {
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
