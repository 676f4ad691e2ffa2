// AlterUserScramCredentials: v0-0
//
// Behavior:
//   - Upsertions carry what the client derived (salt, iterations,
//     SaltedPassword = Hi(password, salt, i)), never the password; the
//     gateway keeps only the salt, the iteration count, StoredKey and
//     ServerKey (RFC 5802), as a record in the store's security log
//     (embedded: synced to disk; Iggy: the state stream, topic
//     "security"). A later login by SCRAM (and PLAIN on the embedded
//     backend) uses it at once on this gateway, within about a second on
//     others sharing the Iggy server; it wins over --sasl-users-file.
//   - Deletions remove a credential, hiding one of the users file too;
//     deleting one that does not exist is RESOURCE_NOT_FOUND.
//   - Checks, per user (one result per user): a mechanism other than
//     SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2) is UNSUPPORTED_SASL_MECHANISM;
//     an empty or unusable name, iterations outside 4096..16384, an empty
//     salt, or a SaltedPassword of the wrong size is
//     UNACCEPTABLE_CREDENTIAL; a user whose mechanism appears twice in the
//     request is DUPLICATE_RESOURCE. A user with any error changes nothing.
//   - Needs ALTER on the CLUSTER when authorization is on; else
//     CLUSTER_AUTHORIZATION_FAILED for every user. With authorization off
//     anyone who can connect may set credentials, as on a Kafka broker
//     without an authorizer: turn --authorizer on with SASL.
//   - A store without a security log: SECURITY_DISABLED; store failures
//     REQUEST_TIMED_OUT / UNKNOWN_SERVER_ERROR.
//
// Version notes:
//   - v0 is flexible (KIP-554).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/scram"
)

func init() {
	register(Spec{Key: 51, MinVersion: 0, MaxVersion: 0, Handle: typed(alterUserScram)})
}

func alterUserScram(c *Call, req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) (kmsg.Response, error) {

	// One result per user, in the order users first appear.
	type userState struct {
		code  int16
		msg   *string
		recs  [][]byte
		mechs map[int8]bool
	}
	var order []string
	users := map[string]*userState{}
	get := func(name string) *userState {
		u, ok := users[name]
		if !ok {
			u = &userState{mechs: map[int8]bool{}}
			users[name] = u
			order = append(order, name)
		}
		return u
	}
	fail := func(u *userState, code int16, msg string) {
		if u.code == 0 {
			u.code, u.msg = code, strp(msg)
		}
	}
	authorized := c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource)
	check := func(u *userState, name string, mech int8) bool {
		switch {
		case !authorized:
			fail(u, kerr.ClusterAuthorizationFailed.Code, "not authorized to alter SCRAM credentials")
		case mech != int8(scram.SHA256) && mech != int8(scram.SHA512):
			fail(u, kerr.UnsupportedSaslMechanism.Code, "unknown SCRAM mechanism")
		case !scram.ValidName(name):
			fail(u, kerr.UnacceptableCredential.Code, "user name must be 1..255 bytes of UTF-8 without spaces or control characters")
		case u.mechs[mech]:
			fail(u, kerr.DuplicateResource.Code, "a user credential cannot be altered twice in the same request")
		}
		u.mechs[mech] = true
		return u.code == 0
	}
	for _, d := range req.Deletions {
		u := get(d.Name)
		if !check(u, d.Name, d.Mechanism) {
			continue
		}
		if _, ok := c.G.Sec.Lookup(d.Name, scram.Mechanism(d.Mechanism)); !ok {
			fail(u, kerr.ResourceNotFound.Code, "attempt to delete a user credential that does not exist")
			continue
		}
		rec, err := bridge.AppendScramRecord(nil, bridge.ScramRecord{Name: d.Name, Mechanism: uint8(d.Mechanism), Delete: true})
		if err != nil {
			fail(u, kerr.UnacceptableCredential.Code, err.Error())
			continue
		}
		u.recs = append(u.recs, rec)
	}
	for _, up := range req.Upsertions {
		u := get(up.Name)
		if !check(u, up.Name, up.Mechanism) {
			continue
		}
		if up.Iterations < scram.MinIterations || up.Iterations > scram.MaxIterations {
			fail(u, kerr.UnacceptableCredential.Code, "iterations must be from 4096 to 16384")
			continue
		}
		if len(up.Salt) == 0 || len(up.Salt) > 255 {
			fail(u, kerr.UnacceptableCredential.Code, "salt must be 1..255 bytes")
			continue
		}
		m := scram.Mechanism(up.Mechanism)
		cred, ok := scram.FromSalted(m, up.SaltedPassword, up.Salt, int(up.Iterations))
		if !ok {
			fail(u, kerr.UnacceptableCredential.Code, "salted password is not the size of the mechanism's hash")
			continue
		}
		rec, err := bridge.AppendScramRecord(nil, bridge.ScramRecord{Name: up.Name, Mechanism: uint8(m),
			Iterations: uint32(cred.Iterations), Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey})
		if err != nil {
			fail(u, kerr.UnacceptableCredential.Code, err.Error())
			continue
		}
		u.recs = append(u.recs, rec)
	}
	var recs [][]byte
	for _, name := range order {
		if u := users[name]; u.code == 0 {
			recs = append(recs, u.recs...)
		}
	}
	var wcode int16
	var wmsg *string
	if len(recs) > 0 {
		if err := c.G.Sec.write(c.Ctx, recs); err != nil {
			wcode, wmsg = securityErr(err)
		}
	}
	resp.Results = make([]kmsg.AlterUserSCRAMCredentialsResponseResult, 0, len(order))
	for _, name := range order {
		u := users[name]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		r.ErrorCode, r.ErrorMessage = u.code, u.msg
		if u.code == 0 && wcode != 0 {
			r.ErrorCode, r.ErrorMessage = wcode, wmsg
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
