package handlers

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/golden"
)

// fuzzTarget picks a registered key and a version in its range from the
// first two bytes of data (the key and version themselves when they are
// served, so seeds stay valid as keys are added); the rest is the body.
func fuzzTarget(data []byte) (Spec, int16, []byte, bool) {
	if len(data) < 2 {
		return Spec{}, 0, nil, false
	}
	sp := Lookup(int16(data[0]))
	if sp == nil {
		specs := Specs()
		sp = &specs[int(data[0])%len(specs)]
	}
	v := int16(data[1])
	if v < sp.MinVersion || v > sp.MaxVersion {
		v = sp.MinVersion + v%(sp.MaxVersion-sp.MinVersion+1)
	}
	return *sp, v, data[2:], true
}

// FuzzDecode feeds arbitrary bodies to Decode for every registered key and
// version and runs whatever decodes through its handler against a real
// embedded store. Neither may panic; responses must encode.
func FuzzDecode(f *testing.F) {
	// Seeds: a valid request of every key at its min and max version.
	for _, s := range Specs() {
		for _, v := range []int16{s.MinVersion, s.MaxVersion} {
			f.Add(fuzzSeed(s.Key, v))
		}
	}
	g := newGateway(f, func(c *Config) {
		c.MaxFetchWait = time.Millisecond
		c.Transactions = TxnConfig{Enabled: true, Version: 2} // the transaction keys answer too
		c.Tokens.Secret = []byte("fuzz-token-secret")
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, v, body, ok := fuzzTarget(data)
		if !ok {
			return
		}
		req, err := Decode(s.Key, v, body)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c := &Call{G: g, Ctx: ctx, Final: data[0]&0x80 != 0}
		c.Header.Key, c.Header.Version = s.Key, v
		if s.Key >= 38 && s.Key <= 41 {
			// The token keys answer only authenticated connections.
			c.TLSPrincipal = "CN=fuzz"
		}
		resp, _ := s.Handle(c, req) // a Go error closes the connection: allowed
		if resp != nil {
			_ = resp.AppendTo(nil)
		}
		c.RunDeferred()
		_ = c.Parked()
	})
}

// fuzzSeed is a FuzzDecode input: key, version, a valid body.
func fuzzSeed(key, version int16) []byte {
	return append([]byte{byte(key), byte(version)}, seedRequest(key, version).AppendTo(nil)...)
}

// seedRequest returns a small valid request of key at version.
func seedRequest(key, version int16) kmsg.Request {
	var req kmsg.Request
	switch key {
	case 0:
		r := produceReq(version, "fz", 0, valueBatch(2))
		req = r
	case 1:
		r := fetchReq(version, "fz", 0, 0)
		req = r
	case 2:
		req = listOffsetsReq(version, "fz", 0, -3)
	case 3:
		req = metadataReq(version, "fz")
	case 19:
		req = createReq(version, withConfig(ct("fz2", 2, 1), "cleanup.policy", "delete"))
	case 20:
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TopicNames = []string{"fz2"}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr("fz2")
		r.Topics = []kmsg.DeleteTopicsRequestTopic{t}
		req = r
	case 22:
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionalID = kmsg.StringPtr("")
		req = r
	case 23:
		req = leaderEpochReq(version, epochAsk{"fz", 0, 0, 0}, epochAsk{"fz", 1, -1, -1})
	case 75:
		req = describeTopicsReq(1, dtpCursor("fz", 0), "fz", "fz2")
	case 48:
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		r.Components = []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, kmsg.StringPtr("fz"))}
		req = r
	case 49:
		r := kmsg.NewPtrAlterClientQuotasRequest()
		r.ValidateOnly = true
		r.Entries = []kmsg.AlterClientQuotasRequestEntry{
			quotaEntry(map[string]float64{quotaProducerByteRate: 1024}, "user", "fz", "client-id", "<default>")}
		req = r
	case 8, 9, 11, 12, 13, 14, 15, 16, 42, 47:
		req = groupSeed(key)
	case 38:
		req = createTokenReq("User:fz", "User:r1")
	case 39:
		r := kmsg.NewPtrRenewDelegationTokenRequest()
		r.HMAC, r.RenewTimeMillis = []byte("hmac"), 1000
		req = r
	case 40:
		r := kmsg.NewPtrExpireDelegationTokenRequest()
		r.HMAC, r.ExpiryPeriodMillis = []byte("hmac"), -1
		req = r
	case 41:
		req = describeTokensReq("User:fz")
	case 18:
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName, r.ClientSoftwareVersion = "kgo", "1.0.0"
		req = r
	default:
		req = kmsg.RequestForKey(key)
	}
	req.SetVersion(version)
	return req
}

// kmsg v1.15.1 checks every declared array length against the bytes left
// (count x the element's minimum wire size) before it allocates, and fails
// the decode otherwise; strings and bytes are bounded by the input too. So a
// frame can make Decode allocate at most a constant times its own size (a
// Go struct per element against a few wire bytes). This test pins that
// bound with adversarial bodies: counts as large as the frame allows, at
// every position, for every key and version.
func TestDecodeAllocBound(t *testing.T) {
	// Not parallel: it measures the heap (MemStats), which other tests would grow.
	if testing.Short() {
		t.Skip("slow")
	}
	const size = 64 << 10
	patterns := map[string][]byte{
		"zeros":      make([]byte, size),
		"ones":       bytes.Repeat([]byte{0x01}, size),
		"ff":         bytes.Repeat([]byte{0xff}, size),
		"int32 4096": bytes.Repeat([]byte{0, 0, 0x10, 0}, size/4),
		"int16 1":    bytes.Repeat([]byte{0, 1}, size/2),
		"uvarint":    bytes.Repeat([]byte{0x02}, size),
		"varint big": bytes.Repeat([]byte{0xff, 0xff, 0x03}, size/3),
	}
	// A leading count of "everything that is left" at each offset.
	for off := 0; off < 16; off++ {
		b := make([]byte, size)
		b[off], b[off+1], b[off+2], b[off+3] = 0, 0, byte(size>>8-1), 0
		patterns["count at "+string(rune('a'+off))] = b
		c := make([]byte, size)
		for i := off; i < size; i++ {
			c[i] = 0x01
		}
		c[off], c[off+1], c[off+2] = 0x80, 0x80, 0x04 // uvarint 65536
		patterns["ucount at "+string(rune('a'+off))] = c
	}
	worst, worstWhat := 0.0, ""
	var ms runtime.MemStats
	for _, s := range Specs() {
		for v := s.MinVersion; v <= s.MaxVersion; v++ {
			for name, body := range patterns {
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				_, _ = Decode(s.Key, v, body)
				runtime.ReadMemStats(&ms)
				ratio := float64(ms.TotalAlloc-before) / float64(len(body))
				if ratio > worst {
					worst, worstWhat = ratio, name
				}
				if ratio > 64 {
					t.Errorf("key %d v%d %s: %.1f bytes allocated per input byte", s.Key, v, name, ratio)
				}
			}
		}
	}
	t.Logf("worst: %.2f bytes allocated per input byte (%s)", worst, worstWhat)
}

// TestGoldenFuzzSeeds writes the seed requests of FuzzDecode to
// testdata/fuzz/FuzzDecode in the go fuzz corpus format when run with
// -update, and otherwise checks that every key has seeds there.
func TestGoldenFuzzSeeds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	for _, s := range Specs() {
		for _, v := range []int16{s.MinVersion, s.MaxVersion} {
			data := fuzzSeed(s.Key, v)
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d-v%d", s.Key, v))
			golden.CheckText(t, path, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data))
		}
	}
}
