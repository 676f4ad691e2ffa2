package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Produce over its client's producer_byte_rate is answered at once with
// a throttle time; the loop then reads nothing of the connection (it is
// muted) until the throttle ends, and serves it again after.
func TestThrottledConnectionIsMutedThenServed(t *testing.T) {
	t.Parallel()
	rc := throttledConn(t, "thr")
	b, _ := rc.frame(produceReq("thr", -1, strings.Repeat("v", 4000)))
	// The throttle starts when the answer goes out, after this: so a
	// connection muted for it answers nothing sooner than the throttle
	// after sent. (A bound from below: a loaded machine only makes the
	// answer later; a loop that did not mute answers at once.)
	sent := time.Now()
	rc.write(b)
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(9)
	rc.readResp(pr)
	if pr.Topics[0].Partitions[0].ErrorCode != 0 || pr.ThrottleMillis < 1000 {
		t.Fatalf("produce: code %d throttle %d ms", pr.Topics[0].Partitions[0].ErrorCode, pr.ThrottleMillis)
	}
	b, corr := rc.frame(apiVersionsReq(3))
	rc.write(b)
	got, _, err := rc.read()
	if err != nil || got != corr {
		t.Fatalf("after the throttle: corr %d, %v", got, err)
	}
	throttle := time.Duration(pr.ThrottleMillis) * time.Millisecond
	if waited := time.Since(sent); waited < throttle {
		t.Fatalf("answered %v after the produce, inside its %v throttle", waited, throttle)
	}
}

// setQuota sets key of the entity (typ, name) to value.
func setQuota(t *testing.T, rc *rawConn, typ, name, key string, value float64) {
	t.Helper()
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	alter.SetVersion(1)
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = typ, kmsg.StringPtr(name)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	e.Entity, e.Ops = []kmsg.AlterClientQuotasRequestEntryEntity{ent}, []kmsg.AlterClientQuotasRequestEntryOp{op}
	alter.Entries = append(alter.Entries, e)
	b, _ := rc.frame(alter)
	rc.write(b)
	ar := kmsg.NewPtrAlterClientQuotasResponse()
	ar.SetVersion(1)
	rc.readResp(ar)
	if len(ar.Entries) != 1 || ar.Entries[0].ErrorCode != 0 {
		t.Fatalf("%+v", ar)
	}
}

// throttledConn is a connection to a fresh server whose client id
// ("test", rawConn's) has producer_byte_rate 320, and the topic it
// produces to. The produces of the tests are ~4.2 KB: 420 B/s over the
// first 10 s window, about 3 s of throttle.
func throttledConn(t *testing.T, topic string) *rawConn {
	t.Helper()
	srv, _ := newTestServer(t, Config{})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, topic)
	setQuota(t, rc, "client-id", "test", "producer_byte_rate", 320)
	return rc
}

// A client older than KIP-219 (Produce v5) is not told to wait: as Kafka,
// the gateway holds its answer for the throttle time instead.
func TestThrottledOldClientAnswerHeld(t *testing.T) {
	t.Parallel()
	rc := throttledConn(t, "thr-old")
	req := produceReq("thr-old", -1, strings.Repeat("v", 4000))
	req.SetVersion(5)
	b, _ := rc.frame(req)
	sent := time.Now()
	rc.write(b)
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(5)
	rc.readResp(pr)
	held := time.Since(sent)
	if pr.Topics[0].Partitions[0].ErrorCode != 0 || pr.ThrottleMillis < 1000 {
		t.Fatalf("produce: code %d throttle %d ms", pr.Topics[0].Partitions[0].ErrorCode, pr.ThrottleMillis)
	}
	// The timer starts after the request was read: the answer cannot come
	// sooner than the throttle time after it was sent.
	if want := time.Duration(pr.ThrottleMillis) * time.Millisecond; held < want {
		t.Fatalf("answered after %v, throttled %v", held, want)
	}
}

// connection_creation_rate for 127.0.0.1 at 1/s: the first window's 10 s
// admit 10 connections; the next is held unread and closed (as Kafka
// delays closing a throttled socket), counted under its close reason.
func TestConnectionRateRefused(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	setQuota(t, dialRaw(t, srv.Addr()), "ip", "127.0.0.1", "connection_creation_rate", 1)
	answered := 0
	for i := 0; i < 11; i++ {
		rc := dialRaw(t, srv.Addr())
		b, corr := rc.frame(apiVersionsReq(3))
		rc.write(b)
		got, _, err := rc.read()
		if err == nil && got == corr {
			answered++
			continue
		}
		if i < 10 {
			t.Fatalf("connection %d refused within the rate: %v", i, err)
		}
	}
	if answered != 10 {
		t.Fatalf("%d of 11 connections answered, want 10", answered)
	}
	if n := srv.g.QuotaStats().ConnectionsThrottled; n != 1 {
		t.Fatalf("%d connections throttled", n)
	}
}
