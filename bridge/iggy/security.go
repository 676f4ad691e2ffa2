package iggy

// The gateway's security log (bridge.SecurityLog: Kafka ACL bindings and
// SCRAM credentials, docs/SECURITY.md) is the state-stream topic
// SecurityTopic, one partition, one message per record (bridge/security.go
// has the layout); a record's position is its Iggy offset. Gateways sharing
// the server share it, so an ACL made through one is enforced by all once
// they have read it (the handlers re-read at most once a second).

import (
	"context"
	"crypto/rand"
)

// SecurityTopic is the state-stream topic holding the security log.
const SecurityTopic = "security"

var securityState = stateTopic{name: SecurityTopic, what: "security log"}

// AppendSecurityRecord implements bridge.SecurityLog, creating the topic
// on first use. Durable as the server's fsync setting makes a send.
func (s *Store) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	m := stateMsg{payload: rec}
	_, _ = rand.Read(m.id[:])
	_, err := s.appendState(ctx, &securityState, m)
	return err
}

// ReadSecurityRecords implements bridge.SecurityLog: an empty log while
// the state stream or the topic does not exist. On an error it returns
// from, as the embedded store does: the caller reads again from there.
func (s *Store) ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (uint64, error) {
	next, err := s.replayState(ctx, &securityState, from, fn)
	if err != nil {
		return from, err
	}
	return next, nil
}
