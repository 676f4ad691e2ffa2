package main

// Delegation token settings (--delegation-token-*, Kafka's
// delegation.token.*) into handlers.TokenConfig. docs/SECURITY.md,
// "Delegation tokens".

import "time"

// maxTokenMillis bounds the token durations: a year.
const maxTokenMillis = 365 * 86400 * 1000

func tokenOptions(c *config) []option {
	t := &c.Handlers.Tokens
	ms := func(d *time.Duration) func(string) error {
		return intIn(1, maxTokenMillis, func(n int64) { *d = time.Duration(n) * time.Millisecond })
	}
	return []option{
		{flag: "delegation-token-secret-key", defText: "none (tokens off)", secret: true,
			usage: "Kafka's delegation.token.secret.key: the HMAC key of delegation tokens (KIP-48); the same on every gateway sharing one Iggy. Without it CreateDelegationToken and the other token keys answer DELEGATION_TOKEN_AUTH_DISABLED. Prefer the variable or --delegation-token-secret-key-file",
			set: given(&c.secretsSet.tokenSecret, func(v string) error {
				t.Secret = []byte(v)
				return nil
			})},
		{flag: "delegation-token-secret-key-file", defText: "none",
			usage: "file holding --delegation-token-secret-key (one line; a trailing newline is dropped)",
			set:   text(&c.tokenSecretFile)},
		{flag: "delegation-token-max-lifetime-ms", def: "604800000",
			usage: "Kafka's delegation.token.max.lifetime.ms: the longest a delegation token lives, however often renewed (7 days)",
			set:   ms(&t.MaxLifetime)},
		{flag: "delegation-token-expiry-time-ms", def: "86400000",
			usage: "Kafka's delegation.token.expiry.time.ms: how long a delegation token lives after its creation or a renewal unless renewed (1 day)",
			set:   ms(&t.ExpiryTime)},
		{flag: "delegation-token-expiry-check-interval-ms", def: "3600000",
			usage: "Kafka's delegation.token.expiry.check.interval.ms: how often expired delegation tokens are purged (1 hour)",
			set:   ms(&t.CheckInterval)},
	}
}
