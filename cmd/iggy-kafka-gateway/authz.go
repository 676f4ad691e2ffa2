package main

// Authorization settings (--authorizer, --super-users) and the
// handlers.AuthzConfig built from them. docs/SECURITY.md, "ACLs".

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/iggy-kafka/gateway/handlers"
)

// authzConfig is the --authorizer / --super-users part of config.
type authzConfig struct {
	On bool
	// SuperUsers, ';'-separated as Kafka's super.users (a string keeps
	// config comparable).
	SuperUsers string
}

func authzOptions() []option {
	return []option{
		{flag: "authorizer", def: "none",
			usage: "none (every client may do everything) or acl (Kafka ACLs, default deny; managed with kafka-acls); docs/SECURITY.md",
			set: func(c *config, v string) error {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "none", "":
					c.Authz.On = false
				case "acl":
					c.Authz.On = true
				default:
					return errors.New("want none or acl")
				}
				return nil
			}},
		{flag: "super-users", defText: "none",
			usage: "principals allowed everything whatever the ACLs say, ';'-separated as Kafka's super.users: User:admin;User:ops",
			set: func(c *config, v string) error {
				var out []string
				for _, p := range strings.Split(v, ";") {
					p = strings.TrimSpace(p)
					if p == "" {
						continue
					}
					kind, name, ok := strings.Cut(p, ":")
					if !ok || kind == "" || name == "" {
						return fmt.Errorf("%q: want Type:name, e.g. User:admin", p)
					}
					out = append(out, p)
				}
				c.Authz.SuperUsers = strings.Join(out, ";")
				return nil
			}},
	}
}

// resolveAuthz checks the authorization settings against the others.
func (c *config) resolveAuthz() error {
	if !c.Authz.On && c.Authz.SuperUsers != "" {
		return errors.New("--super-users is set but --authorizer is none: set --authorizer acl")
	}
	return nil
}

// buildAuthz returns the handlers' authorization configuration.
func buildAuthz(cfg config, log *slog.Logger) handlers.AuthzConfig {
	a := handlers.AuthzConfig{Enabled: cfg.Authz.On}
	if cfg.Authz.SuperUsers != "" {
		a.SuperUsers = strings.Split(cfg.Authz.SuperUsers, ";")
	}
	if a.Enabled {
		log.Info("authorization on (Kafka ACLs, default deny)", "super_users", cfg.Authz.SuperUsers)
		if cfg.Sasl.Mechanisms == "" {
			log.Warn("--authorizer acl without SASL: every client is " + handlers.PrincipalAnonymous)
		}
	}
	return a
}
