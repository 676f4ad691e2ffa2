package bridge

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/golden"
)

func seedSecurityRecords(t testing.TB) [][]byte {
	var out [][]byte
	add := func(b []byte, err error) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	b := ACLBinding{ResourceType: 2, PatternType: 3, ResourceName: "orders", Principal: "User:alice", Host: "*", Operation: 4, Permission: 3}
	add(AppendACLRecord(nil, false, b))
	b.PatternType, b.ResourceName, b.Permission = 4, "logs-", 2
	add(AppendACLRecord(nil, true, b))
	add(AppendScramRecord(nil, ScramRecord{Name: "alice", Mechanism: 1, Iterations: 8192,
		Salt: []byte("salt"), StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32)}))
	add(AppendScramRecord(nil, ScramRecord{Name: "bob", Mechanism: 2, Delete: true}))
	add(AppendTokenRecord(nil, TokenRecord{ID: "Xq3rT0bTQ9a0jYdYV2Lw1A", Owner: "User:alice", Requester: "User:admin",
		Renewers: []string{"User:bob", "User:carol"}, Issued: 1764900000000, Max: 1765504800000, Expiry: 1764986400000}))
	add(AppendTokenRecord(nil, TokenRecord{ID: "Xq3rT0bTQ9a0jYdYV2Lw1A", Remove: true}))
	add(AppendQuotaRecord(nil, QuotaRecord{Entity: []QuotaPart{{Type: "user", Name: "alice"}, {Type: "client-id", Default: true}},
		Key: "producer_byte_rate", Value: 1048576}))
	add(AppendQuotaRecord(nil, QuotaRecord{Entity: []QuotaPart{{Type: "ip", Name: "10.0.0.1"}}, Key: "connection_creation_rate", Remove: true}))
	return out
}

func TestSecurityRecordRoundTrip(t *testing.T) {
	t.Parallel()
	b := ACLBinding{ResourceType: 3, PatternType: 4, ResourceName: "app-", Principal: "User:*", Host: "10.0.0.1", Operation: 2, Permission: 2}
	rec, err := AppendACLRecord(nil, true, b)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ParseSecurityRecord(rec)
	if !ok || got.Kind != SecACLRemove || got.ACL != b {
		t.Fatalf("%+v %v", got, ok)
	}
	s := ScramRecord{Name: "ü", Mechanism: 2, Iterations: 4096, Salt: []byte{9}, StoredKey: []byte{1, 2}, ServerKey: []byte{3}}
	rec, err = AppendScramRecord(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	got, ok = ParseSecurityRecord(rec)
	if !ok || got.Kind != SecScramSet || got.Scram.Name != s.Name || got.Scram.Iterations != 4096 ||
		!bytes.Equal(got.Scram.StoredKey, s.StoredKey) || !bytes.Equal(got.Scram.Salt, s.Salt) {
		t.Fatalf("%+v %v", got, ok)
	}
	// Truncations and a trailing byte are refused.
	for i := range rec {
		if _, ok := ParseSecurityRecord(rec[:i]); ok {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
	if _, ok := ParseSecurityRecord(append(rec, 0)); ok {
		t.Fatal("trailing byte accepted")
	}
	tok := TokenRecord{ID: "id1", Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
		Issued: 1, Max: -1, Expiry: 1 << 62}
	rec, err = AppendTokenRecord(nil, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, ok = ParseSecurityRecord(rec)
	if !ok || got.Kind != SecTokenSet || got.Token.ID != "id1" || got.Token.Owner != tok.Owner ||
		len(got.Token.Renewers) != 1 || got.Token.Renewers[0] != "User:bob" || got.Token.Max != -1 || got.Token.Expiry != 1<<62 {
		t.Fatalf("%+v %v", got, ok)
	}
	for i := range rec {
		if _, ok := ParseSecurityRecord(rec[:i]); ok {
			t.Fatalf("truncated token record at %d accepted", i)
		}
	}
	q := QuotaRecord{Entity: []QuotaPart{{Type: "user", Default: true}, {Type: "client-id", Name: "app"}}, Key: "consumer_byte_rate", Value: 2.5}
	if rec, err = AppendQuotaRecord(nil, q); err != nil {
		t.Fatal(err)
	}
	got, ok = ParseSecurityRecord(rec)
	if !ok || got.Kind != SecQuota || len(got.Quota.Entity) != 2 || got.Quota.Entity[0] != q.Entity[0] ||
		got.Quota.Entity[1] != q.Entity[1] || got.Quota.Key != q.Key || got.Quota.Value != 2.5 || got.Quota.Remove {
		t.Fatalf("%+v %v", got, ok)
	}
	for i := range rec {
		if _, ok := ParseSecurityRecord(rec[:i]); ok {
			t.Fatalf("quota truncated at %d accepted", i)
		}
	}
	if _, err := AppendQuotaRecord(nil, QuotaRecord{Key: "k"}); err == nil {
		t.Fatal("quota record without an entity encoded")
	}
	long := ACLBinding{ResourceName: string(make([]byte, MaxSecurityString+1))}
	if _, err := AppendACLRecord(nil, false, long); err == nil {
		t.Fatal("over-long name encoded")
	}
}

// FuzzSecurityRecord: the decoder never panics, and whatever it accepts
// encodes back to the same bytes (one meaning per record).
func FuzzSecurityRecord(f *testing.F) {
	for _, s := range seedSecurityRecords(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		r, ok := ParseSecurityRecord(rec)
		if !ok {
			return
		}
		var back []byte
		var err error
		switch r.Kind {
		case SecACLAdd, SecACLRemove:
			back, err = AppendACLRecord(nil, r.Kind == SecACLRemove, r.ACL)
		case SecTokenSet, SecTokenRemove:
			back, err = AppendTokenRecord(nil, r.Token)
		case SecQuota:
			back, err = AppendQuotaRecord(nil, r.Quota)
		default:
			back, err = AppendScramRecord(nil, r.Scram)
		}
		if err != nil || !bytes.Equal(back, rec) {
			t.Fatalf("accepted %x, re-encoded %x (%v)", rec, back, err)
		}
	})
}

// TestGoldenSecurityFuzzSeeds keeps the checked-in corpus in step with
// the seeds (go test ./bridge -run GoldenSecurity -update rewrites it).
func TestGoldenSecurityFuzzSeeds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "fuzz", "FuzzSecurityRecord")
	seeds := seedSecurityRecords(t)
	for i, s := range seeds {
		path := filepath.Join(dir, "seed-"+string(rune('0'+i)))
		golden.CheckText(t, path, []byte("go test fuzz v1\n[]byte("+quoteBytes(s)+")\n"))
	}
}

func quoteBytes(b []byte) string {
	const hexd = "0123456789abcdef"
	var sb bytes.Buffer
	sb.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			sb.WriteString(`\x`)
			sb.WriteByte(hexd[c>>4])
			sb.WriteByte(hexd[c&15])
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// secStore keeps a security log in memory.
type secStore struct {
	Backend
	recs [][]byte
}

func (s *secStore) Capabilities() Capabilities { return Capabilities{} }

func (s *secStore) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	s.recs = append(s.recs, bytes.Clone(rec))
	return nil
}

func (s *secStore) ReadSecurityRecords(ctx context.Context, from uint64, fn func([]byte)) (uint64, error) {
	for i := from; i < uint64(len(s.recs)); i++ {
		fn(s.recs[i])
	}
	return max(from, uint64(len(s.recs))), nil
}

// The guard forwards the security log.
func TestGuardSecurityLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Guard(&secStore{}, GuardOptions{Timeout: time.Second})
	if err := g.AppendSecurityRecord(ctx, []byte("A1")); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	next, err := g.ReadSecurityRecords(ctx, 0, func(r []byte) { got = append(got, bytes.Clone(r)) })
	if err != nil || next != 1 || len(got) != 1 || string(got[0]) != "A1" {
		t.Fatalf("read: %v %d %q", err, next, got)
	}
}
