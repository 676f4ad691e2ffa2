package main

// Authorization settings (--authorizer, --super-users) into
// handlers.AuthzConfig. docs/SECURITY.md, "ACLs".

import (
	"errors"
	"fmt"
	"strings"
)

func authzOptions(c *config) []option {
	return []option{
		{flag: "authorizer", def: "none",
			usage: "none (every client may do everything) or acl (Kafka ACLs, default deny; managed with kafka-acls); docs/SECURITY.md",
			set: func(v string) error {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "none", "":
					c.Handlers.Authz.Enabled = false
				case "acl":
					c.Handlers.Authz.Enabled = true
				default:
					return errors.New("want none or acl")
				}
				return nil
			}},
		{flag: "super-users", defText: "none",
			usage: "principals allowed everything whatever the ACLs say, ';'-separated as Kafka's super.users: User:admin;User:ops",
			set: func(v string) error {
				var out []string
				for _, p := range listItems(v, ";") {
					kind, name, ok := strings.Cut(p, ":")
					if !ok || kind == "" || name == "" {
						return fmt.Errorf("%q: want Type:name, e.g. User:admin", p)
					}
					out = append(out, p)
				}
				c.Handlers.Authz.SuperUsers = out
				return nil
			}},
	}
}

// resolveAuthz checks the authorization settings against the others.
func (c *config) resolveAuthz() error {
	if a := c.Handlers.Authz; !a.Enabled && len(a.SuperUsers) > 0 {
		return errors.New("--super-users is set but --authorizer is none: set --authorizer acl")
	}
	return nil
}
