package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// A Produce over its client's producer_byte_rate is answered at once with
// a throttle time; the loop then reads nothing of the connection (it is
// muted) until the throttle ends, and serves it again after.
func TestThrottledConnectionIsMutedThenServed(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "thr")

	// The produce below is ~4.2 KB: 420 B/s over the first 10 s window.
	// Against 320 B/s that is about 3 s of throttle.
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	alter.SetVersion(1)
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("test") // rawConn's client id
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "producer_byte_rate", 320
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

	b, _ = rc.frame(produceReq("thr", -1, strings.Repeat("v", 4000)))
	rc.write(b)
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(9)
	rc.readResp(pr)
	if pr.Topics[0].Partitions[0].ErrorCode != 0 || pr.ThrottleMillis < 1000 {
		t.Fatalf("produce: code %d throttle %d ms", pr.Topics[0].Partitions[0].ErrorCode, pr.ThrottleMillis)
	}
	before := srv.mutes.Load()
	b, corr := rc.frame(apiVersionsReq(3))
	rc.write(b)
	await.True(t, time.Duration(pr.ThrottleMillis)*time.Millisecond, "the throttled connection to be muted",
		func() bool { return srv.mutes.Load() > before })
	got, _, err := rc.read()
	if err != nil || got != corr {
		t.Fatalf("after the throttle: corr %d, %v", got, err)
	}
}
