package bridge

// The gateway's security state (Kafka ACL bindings, SCRAM credentials,
// delegation tokens and client quotas, docs/SECURITY.md) is kept as an ordered log of small records in the
// store: the embedded store under its own key prefix, a real Iggy server in
// the state stream (docs/IGGY.md). The handlers rebuild their in-memory
// view by replaying it, so the records' meaning lives here once and both
// stores keep opaque bytes.
//
// Record layout (all integers big-endian), one per change:
//
//	'A' binding   an ACL binding was created
//	'R' binding   an ACL binding was deleted
//	'U' u16 len name, name, u8 mechanism, u32 iterations,
//	    u8 len salt, salt, u8 len stored key, stored key,
//	    u8 len server key, server key    a SCRAM credential was set
//	'X' u16 len name, name, u8 mechanism   a SCRAM credential was deleted
//	'D' u16 len id, id, u16 len owner, owner, u16 len requester, requester,
//	    u16 count, count x (u16 len renewer, renewer),
//	    i64 issued, i64 max, i64 expiry   a delegation token was created or
//	    renewed (its whole state; times in Unix milliseconds)
//	'E' u16 len id, id   a delegation token was expired or purged
//	'Q' u8 n, n x (u16 len type, type, u8 default, u16 len name, name),
//	    u16 len key, key, u8 remove, [f64 value unless remove]
//	    a client quota of an entity was set or removed
//
//	binding: i8 resource type, i8 pattern type, u16 len + resource name,
//	         u16 len + principal, u16 len + host, i8 operation, i8 permission
//
// A record this build cannot read (another leading byte, trailing bytes)
// is skipped by the reader, so a newer gateway's records do not stop an
// older one.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
)

// SecurityLog is a Backend's durable log of the gateway's security
// records. Any goroutine.
type SecurityLog interface {
	// AppendSecurityRecord appends rec durably (as the store's sync
	// policy makes a write; the embedded store always syncs these).
	AppendSecurityRecord(ctx context.Context, rec []byte) error
	// ReadSecurityRecords calls fn with every record at position from or
	// later, in order, and returns the position after the last one (pass
	// it as from next time to read only what was appended since). rec is
	// valid only during fn. An empty log answers (from, nil).
	ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (next uint64, err error)
}

// ACLBinding is one Kafka ACL: its fields hold Kafka's enum codes
// (kmsg.ACLResourceType, ACLResourcePatternType, ACLOperation,
// ACLPermissionType), which this package does not interpret.
type ACLBinding struct {
	ResourceType int8
	PatternType  int8
	ResourceName string
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// ScramRecord is one user's SCRAM credential for one mechanism (1:
// SCRAM-SHA-256, 2: SCRAM-SHA-512, as Kafka numbers them), or its
// deletion when Delete is set.
type ScramRecord struct {
	Name       string
	Mechanism  uint8
	Iterations uint32
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Delete     bool
}

// Record kinds.
const (
	SecACLAdd      = 'A'
	SecACLRemove   = 'R'
	SecScramSet    = 'U'
	SecScramDelete = 'X'
	SecTokenSet    = 'D'
	SecTokenRemove = 'E'
	SecQuota       = 'Q'
)

// TokenRecord is a delegation token's state (KIP-48), or its removal when
// Remove is set (only ID is then kept). Principals are "Type:name". The
// token's HMAC is not kept: it is computed from the secret and the id.
type TokenRecord struct {
	ID        string
	Owner     string
	Requester string
	Renewers  []string
	Issued    int64
	Max       int64
	Expiry    int64
	Remove    bool
}

// maxRenewers bounds a token's renewers in a record.
const maxRenewers = 1024

// AppendTokenRecord appends a 'D' (set) or, with r.Remove, 'E' record.
func AppendTokenRecord(dst []byte, r TokenRecord) ([]byte, error) {
	kind := byte(SecTokenSet)
	if r.Remove {
		kind = SecTokenRemove
	}
	dst = append(dst, kind)
	dst, err := appendStr16(dst, r.ID)
	if err != nil || r.Remove {
		return dst, err
	}
	if len(r.Renewers) > maxRenewers {
		return nil, errSecurityRecord
	}
	for _, s := range []string{r.Owner, r.Requester} {
		if dst, err = appendStr16(dst, s); err != nil {
			return nil, err
		}
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.Renewers)))
	for _, s := range r.Renewers {
		if dst, err = appendStr16(dst, s); err != nil {
			return nil, err
		}
	}
	for _, v := range []int64{r.Issued, r.Max, r.Expiry} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(v))
	}
	return dst, nil
}

// MaxSecurityString bounds a name, principal or host in a record; Kafka's
// own are short and the handlers refuse longer ones before they get here.
const MaxSecurityString = 1024

var errSecurityRecord = errors.New("bridge: malformed security record")

func appendStr16(dst []byte, s string) ([]byte, error) {
	if len(s) > MaxSecurityString {
		return nil, errSecurityRecord
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...), nil
}

func appendBytes8(dst, b []byte) ([]byte, error) {
	if len(b) > 255 {
		return nil, errSecurityRecord
	}
	dst = append(dst, byte(len(b)))
	return append(dst, b...), nil
}

// AppendACLRecord appends an 'A' (add) or 'R' (remove) record of b.
func AppendACLRecord(dst []byte, remove bool, b ACLBinding) ([]byte, error) {
	kind := byte(SecACLAdd)
	if remove {
		kind = SecACLRemove
	}
	dst = append(dst, kind, byte(b.ResourceType), byte(b.PatternType))
	var err error
	for _, s := range []string{b.ResourceName, b.Principal, b.Host} {
		if dst, err = appendStr16(dst, s); err != nil {
			return nil, err
		}
	}
	return append(dst, byte(b.Operation), byte(b.Permission)), nil
}

// AppendScramRecord appends a 'U' (set) or, with r.Delete, 'X' record.
func AppendScramRecord(dst []byte, r ScramRecord) ([]byte, error) {
	kind := byte(SecScramSet)
	if r.Delete {
		kind = SecScramDelete
	}
	dst = append(dst, kind)
	dst, err := appendStr16(dst, r.Name)
	if err != nil {
		return nil, err
	}
	dst = append(dst, r.Mechanism)
	if r.Delete {
		return dst, nil
	}
	dst = binary.BigEndian.AppendUint32(dst, r.Iterations)
	for _, b := range [][]byte{r.Salt, r.StoredKey, r.ServerKey} {
		if dst, err = appendBytes8(dst, b); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// QuotaPart is one component of a client quota entity: Type is Kafka's
// entity type ("user", "client-id", "ip"); Default is the <default>
// entity of that type (Kafka's null name), when Name is "".
type QuotaPart struct {
	Type    string
	Name    string
	Default bool
}

// QuotaRecord sets Key of Entity to Value, or removes it when Remove is
// set (docs/SECURITY.md, "Client quotas"). This package does not interpret
// types, keys or values.
type QuotaRecord struct {
	Entity []QuotaPart
	Key    string
	Value  float64
	Remove bool
}

// maxQuotaParts bounds an entity's components; Kafka's have at most two.
const maxQuotaParts = 3

// AppendQuotaRecord appends a 'Q' record of r.
func AppendQuotaRecord(dst []byte, r QuotaRecord) ([]byte, error) {
	if len(r.Entity) == 0 || len(r.Entity) > maxQuotaParts {
		return nil, errSecurityRecord
	}
	dst = append(dst, SecQuota, byte(len(r.Entity)))
	var err error
	for _, p := range r.Entity {
		if dst, err = appendStr16(dst, p.Type); err != nil {
			return nil, err
		}
		dst = append(dst, boolByte(p.Default))
		if dst, err = appendStr16(dst, p.Name); err != nil {
			return nil, err
		}
	}
	if dst, err = appendStr16(dst, r.Key); err != nil {
		return nil, err
	}
	dst = append(dst, boolByte(r.Remove))
	if !r.Remove {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(r.Value))
	}
	return dst, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// SecurityRecord is a decoded record: Kind says which of the fields
// holds it.
type SecurityRecord struct {
	Kind  byte
	ACL   ACLBinding
	Scram ScramRecord
	Token TokenRecord
	Quota QuotaRecord
}

type secReader struct {
	p   []byte
	bad bool
}

func (r *secReader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

// take returns the next n bytes, or nil (and marks r bad) when fewer are
// left.
func (r *secReader) take(n int) []byte {
	if len(r.p) < n {
		r.bad = true
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *secReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *secReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *secReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// flag reads a byte that must be 0 or 1.
func (r *secReader) flag() bool {
	b := r.u8()
	if b > 1 {
		r.bad = true
	}
	return b == 1
}

func (r *secReader) str16() string {
	if len(r.p) < 2 {
		r.bad = true
		return ""
	}
	n := int(binary.BigEndian.Uint16(r.p))
	if n > MaxSecurityString || len(r.p) < 2+n {
		r.bad = true
		return ""
	}
	s := string(r.p[2 : 2+n])
	r.p = r.p[2+n:]
	return s
}

func (r *secReader) bytes8() []byte {
	n := int(r.u8())
	if r.bad || len(r.p) < n {
		r.bad = true
		return nil
	}
	b := append([]byte(nil), r.p[:n]...)
	r.p = r.p[n:]
	return b
}

// ParseSecurityRecord decodes rec (copying what it keeps); ok is false for
// anything malformed or of an unknown kind. Never panics; bounded by
// len(rec).
func ParseSecurityRecord(rec []byte) (out SecurityRecord, ok bool) {
	r := secReader{p: rec}
	out.Kind = r.u8()
	switch out.Kind {
	case SecACLAdd, SecACLRemove:
		b := &out.ACL
		b.ResourceType = int8(r.u8())
		b.PatternType = int8(r.u8())
		b.ResourceName = r.str16()
		b.Principal = r.str16()
		b.Host = r.str16()
		b.Operation = int8(r.u8())
		b.Permission = int8(r.u8())
	case SecScramSet, SecScramDelete:
		s := &out.Scram
		s.Name = r.str16()
		s.Mechanism = r.u8()
		if out.Kind == SecScramDelete {
			s.Delete = true
			break
		}
		s.Iterations = r.u32()
		s.Salt = r.bytes8()
		s.StoredKey = r.bytes8()
		s.ServerKey = r.bytes8()
	case SecTokenSet, SecTokenRemove:
		t := &out.Token
		t.ID = r.str16()
		if out.Kind == SecTokenRemove {
			t.Remove = true
			break
		}
		t.Owner = r.str16()
		t.Requester = r.str16()
		n := int(r.u16())
		if n > maxRenewers {
			return SecurityRecord{}, false
		}
		for i := 0; i < n && !r.bad; i++ {
			t.Renewers = append(t.Renewers, r.str16())
		}
		t.Issued = int64(r.u64())
		t.Max = int64(r.u64())
		t.Expiry = int64(r.u64())
	case SecQuota:
		q := &out.Quota
		n := int(r.u8())
		if n == 0 || n > maxQuotaParts {
			return SecurityRecord{}, false
		}
		q.Entity = make([]QuotaPart, n)
		for i := range q.Entity {
			q.Entity[i] = QuotaPart{Type: r.str16(), Default: r.flag(), Name: r.str16()}
		}
		q.Key = r.str16()
		if q.Remove = r.flag(); !q.Remove {
			q.Value = math.Float64frombits(r.u64())
		}
	default:
		return SecurityRecord{}, false
	}
	if r.bad || len(r.p) != 0 {
		return SecurityRecord{}, false
	}
	return out, true
}

// Act is what a client asks to do with a topic, in the terms Iggy's
// permissions are written in (docs/SECURITY.md, "ACLs and Iggy
// permissions").
type Act uint8

const (
	ActDescribe Act = iota // see the topic: Metadata, ListOffsets, DescribeConfigs
	ActPoll                // read its messages and the group offsets on it
	ActSend                // append to it
	ActCreate              // create a topic in the stream
	ActManage              // delete, alter, add partitions, delete records
)

// PrincipalPermissions decides by the store's own permissions of a user
// (the Iggy backend: the Iggy user a PLAIN client logged in as), beside the
// Kafka ACLs. Allow reports whether user may do act on topic of stream;
// it fails closed (false) when the permissions cannot be read. Worker
// goroutines only: on a cache miss it waits for the store, within ctx.
type PrincipalPermissions interface {
	Allow(ctx context.Context, user string, act Act, stream, topic string) bool
}
