package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
)

// validRequest returns a request of key that the gateway can answer at any
// served version without waiting: empty where that is legal, acks=all for
// Produce (acks=0 would get no reply), no wait for Fetch.
func validRequest(key int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		r.Acks = -1
		r.TimeoutMillis = 5000
	case *kmsg.FetchRequest:
		r.MaxWaitMillis = 0
		r.MaxBytes = 1 << 20
	case *kmsg.ApiVersionsRequest:
		r.ClientSoftwareName = "e2e"
		r.ClientSoftwareVersion = "1"
	case *kmsg.MetadataRequest:
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr("survivor")
		r.Topics = append(r.Topics, t)
	}
	return req
}

// The Rust gateway's manual plan, categories B (version firewall), C
// (unlisted keys), F (TCP behaviour) and H (adversarial and transactional
// input), against the in-process gateway. After every case a fresh
// connection still gets ApiVersions answered, and records stored before the
// cases read back unchanged at the end.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "survivor", 1)
	want := produceAll(t, cl, testRecords("survivor", 20))
	cl.Close()

	run := func(name string, fn func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			fn(t)
			apiVersionsOK(t, gw.Addr)
		})
	}

	// B: each served key answers at its min and max version; min-1 (when
	// >= 0) and max+1 close the connection, except ApiVersions above its
	// max, which answers a v0 body with UNSUPPORTED_VERSION (KIP-511).
	for _, s := range handlers.Specs() {
		s := s
		if s.Gated != nil {
			// Behind a flag this gateway runs without (transactions):
			// an unlisted key, category C.
			continue
		}
		name := kmsg.NameForKey(s.Key)
		run(fmt.Sprintf("B/%s/v%d-min", name, s.MinVersion), func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			w.roundTrip(validRequest(s.Key), s.MinVersion, 11)
		})
		run(fmt.Sprintf("B/%s/v%d-max", name, s.MaxVersion), func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			w.roundTrip(validRequest(s.Key), s.MaxVersion, 12)
		})
		if s.MinVersion > 0 {
			run(fmt.Sprintf("B/%s/v%d-below-min", name, s.MinVersion-1), func(t *testing.T) {
				w := dialWire(t, gw.Addr)
				w.write(frameOf(validRequest(s.Key), s.MinVersion-1, 13))
				w.expectClosed(fmt.Sprintf("%s v%d", name, s.MinVersion-1))
			})
		}
		run(fmt.Sprintf("B/%s/v%d-above-max", name, s.MaxVersion+1), func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			w.write(frameOf(validRequest(s.Key), s.MaxVersion+1, 14))
			if s.Key != 18 {
				w.expectClosed(fmt.Sprintf("%s v%d", name, s.MaxVersion+1))
				return
			}
			corr, body, err := w.readFrame(5 * time.Second)
			if err != nil || corr != 14 {
				t.Fatalf("ApiVersions above max: corr %d, err %v; want an answer", corr, err)
			}
			resp := kmsg.NewPtrApiVersionsResponse() // v0 body
			if err := resp.ReadFrom(body); err != nil {
				t.Fatalf("decoding the v0 body: %v", err)
			}
			if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
				t.Fatalf("ApiVersions above max: error %d with %d keys, want %d and the key list",
					resp.ErrorCode, len(resp.ApiKeys), kerr.UnsupportedVersion.Code)
			}
			// The connection stays usable: the client retries at v0.
			w.roundTrip(validRequest(18), 0, 15)
		})
	}

	// C: keys the gateway does not serve close the connection, known to
	// Kafka or not; the transaction keys too while transactions are off.
	for _, key := range []int16{24, 25, 26, 27, 28, 76, 99, 32767, -1} {
		if s := handlers.Lookup(key); s != nil && s.Gated == nil {
			continue
		}
		run(fmt.Sprintf("C/key-%d", key), func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			var f []byte
			if req := kmsg.RequestForKey(key); req != nil {
				f = frameOf(req, 0, 21)
			} else {
				f = rawFrame(key, 0, 21, nil)
			}
			w.write(f)
			w.expectClosed(fmt.Sprintf("key %d", key))
		})
	}

	// F: correlation ids come back as sent, whatever their value.
	run("F/correlation-ids", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		for _, corr := range []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 0x01020304} {
			w.roundTrip(validRequest(18), 3, corr)
			w.roundTrip(validRequest(3), 12, corr)
		}
	})

	// F: many requests in one write are answered in order.
	run("F/pipelined", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		var all []byte
		var reqs []kmsg.Request
		for i := 0; i < 60; i++ {
			var req kmsg.Request
			var v int16
			switch i % 3 {
			case 0:
				req, v = validRequest(18), 3
			case 1:
				req, v = validRequest(3), 9
			default:
				req, v = validRequest(18), 0
			}
			all = append(all, frameOf(req, v, int32(1000+i))...)
			reqs = append(reqs, req)
		}
		w.write(all)
		for i, req := range reqs {
			w.response(req, int32(1000+i))
		}
	})

	// F: a frame that arrives one byte at a time is still answered.
	run("F/byte-by-byte", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		_ = w.c.SetNoDelay(true)
		req := validRequest(3)
		for _, b := range frameOf(req, 1, 77) {
			w.write([]byte{b})
			time.Sleep(time.Millisecond) // the trickle is the point
		}
		w.response(req, 77)
	})

	// F/H: frame sizes that cannot be a Kafka request close at once.
	badStarts := map[string][]byte{
		"zero-length":      {0, 0, 0, 0},
		"negative-length":  {0xff, 0xff, 0xff, 0xff},
		"over-max-frame":   binary.BigEndian.AppendUint32(nil, 8<<20+1),
		"max-int32-length": {0x7f, 0xff, 0xff, 0xff},
		"http-request":     []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
		"http-post":        []byte("POST /topics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
		// A TLS 1.2 ClientHello record header and the start of its body.
		"tls-client-hello": {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0xaa, 0xbb},
	}
	for name, b := range badStarts {
		run("F/"+name, func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			w.write(b)
			w.expectClosed(name)
		})
	}

	// H: bodies cut short (with a size prefix that matches what was sent)
	// cannot be decoded and close the connection.
	truncated := []struct {
		name    string
		req     kmsg.Request
		version int16
	}{
		{"metadata-v12", validRequest(3), 12},
		{"metadata-v1", validRequest(3), 1},
		{"produce-v9", produceReq("survivor", recordBatch(-1, 0, "cut", "short")), 9},
		{"produce-v3", produceReq("survivor", recordBatch(-1, 0, "cut")), 3},
		{"init-producer-id-v4", &kmsg.InitProducerIDRequest{TransactionTimeoutMillis: 1000, ProducerID: -1, ProducerEpoch: -1}, 4},
		{"create-topics-v5", createTopicsReq("never-created"), 5},
	}
	for _, tc := range truncated {
		full := frameOf(tc.req, tc.version, 31)
		bodyStart := headerLen(full)
		for _, cut := range []int{1, (len(full) - bodyStart) / 2} {
			if cut <= 0 || cut >= len(full)-bodyStart {
				continue
			}
			keep := len(full) - cut
			run(fmt.Sprintf("H/truncated/%s/minus-%d", tc.name, cut), func(t *testing.T) {
				f := append([]byte(nil), full[:keep]...)
				binary.BigEndian.PutUint32(f, uint32(keep-4))
				w := dialWire(t, gw.Addr)
				w.write(f)
				w.expectClosed(fmt.Sprintf("%s cut by %d bytes", tc.name, cut))
			})
		}
	}
	run("H/truncated-header", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		w.write([]byte{0, 0, 0, 3, 0, 18, 0})
		w.expectClosed("a 3-byte header")
	})

	// H: random frames (a fixed seed, so a failure reproduces) close the
	// connection unless they happen to spell a served key and version.
	rng := rand.New(rand.NewSource(20240611))
	for i := 0; i < 40; i++ {
		body := make([]byte, 1+rng.Intn(300))
		rng.Read(body)
		f := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		f = append(f, body...)
		key := int16(-1)
		if len(body) >= 2 {
			key = int16(binary.BigEndian.Uint16(body))
		}
		if s := handlers.Lookup(key); s != nil {
			continue // could be a valid request by chance; not this test's point
		}
		run(fmt.Sprintf("H/random-frame-%d", i), func(t *testing.T) {
			w := dialWire(t, gw.Addr)
			w.write(f)
			w.expectClosed(fmt.Sprintf("random frame %x...", f[:min(len(f), 12)]))
		})
	}
	run("H/random-stream", func(t *testing.T) {
		b := make([]byte, 4096)
		rng.Read(b)
		b[0] = 0x80 | b[0] // a negative size: no way to wait for it
		w := dialWire(t, gw.Addr)
		w.write(b)
		w.expectClosed("4 KiB of random bytes")
	})

	// H: a transactional InitProducerId is refused with UNSUPPORTED_VERSION
	// and the connection stays usable, also for an idempotent producer.
	run("H/transactional-init-producer-id", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		tx := &kmsg.InitProducerIDRequest{TransactionalID: kmsg.StringPtr("tx-1"), TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1}
		resp := w.roundTrip(tx, 4, 41).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || resp.ProducerID != -1 {
			t.Fatalf("transactional InitProducerId: error %d, producer id %d; want %d and -1",
				resp.ErrorCode, resp.ProducerID, kerr.UnsupportedVersion.Code)
		}
		w.roundTrip(validRequest(18), 3, 42)
		idem := &kmsg.InitProducerIDRequest{TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1}
		resp = w.roundTrip(idem, 4, 43).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 {
			t.Fatalf("idempotent InitProducerId after a refused one: error %d, producer id %d", resp.ErrorCode, resp.ProducerID)
		}
	})

	// H: a transactional Produce is refused per partition and stores nothing.
	run("H/transactional-produce", func(t *testing.T) {
		w := dialWire(t, gw.Addr)
		req := produceReq("survivor", recordBatch(7, 0x10, "in a transaction"))
		req.TransactionID = kmsg.StringPtr("tx-1")
		resp := w.roundTrip(req, 9, 51).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("transactional Produce answer: %+v", resp.Topics)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code == 0 {
			t.Fatal("transactional Produce was accepted")
		}
		w.roundTrip(validRequest(18), 3, 52)
	})

	// Nothing above stored anything, and what was stored before reads back.
	st, err := gw.Store.Partition(context.Background(), gw.Stream, "survivor", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Next != uint64(len(want)) {
		t.Errorf("survivor holds offsets up to %d, want %d: a hostile case stored records", st.Next, len(want))
	}
	got := consumeN(t, gw.Addr, "survivor", len(want))
	sameRecs(t, want, got)
}
