package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The user story: list, produce keyed records with headers, read every one
// back in order, identical.
func TestKcatProduceConsume(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)

	input, keys, values := kcatInput(200)
	kcatProduce(t, kcat, gw.Addr, "orders", input, "-K:", "-H", "k=v", "-H", "trace=abc-123")

	m := kcatList(t, kcat, gw.Addr)
	if len(m.Brokers) != 1 || m.Brokers[0].ID != 1 || m.Brokers[0].Name != gw.Addr {
		t.Errorf("brokers = %+v, want one: id 1 at %s", m.Brokers, gw.Addr)
	}
	found := false
	for _, tp := range m.Topics {
		if tp.Topic == "orders" {
			found = true
			if len(tp.Partitions) != 1 || tp.Partitions[0].Leader != 1 || tp.Err != "" {
				t.Errorf("orders metadata = %+v", tp)
			}
		}
	}
	if !found {
		t.Errorf("kcat -L does not list orders: %+v", m.Topics)
	}

	checkKcatLines(t, kcatConsumeLines(t, kcat, gw.Addr, "orders"), keys, "k=v,trace=abc-123", values)
}

// A header name given twice (legal in Kafka; tracing and Spring do it) is
// kept: librdkafka reads every header back, in the order it was sent, and
// so does franz-go, with the repeated values byte for byte.
func TestKcatRepeatedHeaderNames(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	input, keys, values := kcatInput(20)
	kcatProduce(t, kcat, gw.Addr, "repeated-headers", input, "-K:",
		"-H", "traceparent=00-a-01", "-H", "b3=1", "-H", "traceparent=00-b-01", "-H", "empty=")
	checkKcatLines(t, kcatConsumeLines(t, kcat, gw.Addr, "repeated-headers"), keys,
		"traceparent=00-a-01,b3=1,traceparent=00-b-01,empty=", values)
	for _, r := range consumeN(t, gw.Addr, "repeated-headers", len(keys)) {
		if r.Headers != "traceparent=00-a-01,b3=1,traceparent=00-b-01,empty=" {
			t.Fatalf("franz-go reads %s", r)
		}
	}
}

// kcat -z snappy: librdkafka's snappy framing decodes on Produce.
func TestKcatSnappy(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	input, keys, values := kcatInput(300)
	kcatProduce(t, kcat, gw.Addr, "snappy-orders", input, "-K:", "-z", "snappy", "-H", "c=snappy")
	checkKcatLines(t, kcatConsumeLines(t, kcat, gw.Addr, "snappy-orders"), keys, "c=snappy", values)
}

// An unknown topic is created on first use by default; kcat -L then lists
// it with the default partition count.
func TestKcatAutoCreate(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	_, errOut, err := runCmd(t, 60*time.Second, "a:1\nb:2\n", kcat, "-b", gw.Addr, "-P", "-t", "fresh-topic", "-K:")
	if err != nil {
		t.Fatalf("kcat -P: %v\nstderr: %s", err, errOut)
	}
	m := kcatList(t, kcat, gw.Addr, "-t", "fresh-topic")
	if len(m.Topics) != 1 || m.Topics[0].Err != "" || len(m.Topics[0].Partitions) != 1 {
		t.Fatalf("fresh-topic metadata = %+v", m.Topics)
	}
	if lines := kcatConsumeLines(t, kcat, gw.Addr, "fresh-topic"); strings.Join(lines, ";") != "a||1;b||2" {
		t.Fatalf("read back %q", lines)
	}
}

// With auto-create off (--auto-create-topics=false), kcat's produce to an
// unknown topic fails and the topic is never made.
func TestKcatAutoCreateOff(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t, withAutoCreate(false))
	_, errOut, err := runCmd(t, 60*time.Second, "a:1\n", kcat, "-b", gw.Addr, "-P", "-t", "not-there", "-K:",
		"-X", "message.timeout.ms=4000", "-X", "topic.metadata.propagation.max.ms=1000")
	if err == nil && !strings.Contains(strings.ToLower(errOut), "unknown topic") {
		t.Fatalf("kcat -P to an unknown topic with auto-create off succeeded; stderr: %s", errOut)
	}
	if _, err := gw.Store.Topic(context.Background(), gw.Stream, "not-there"); err == nil {
		t.Fatal("the topic exists although auto-create is off")
	}
	m := kcatList(t, kcat, gw.Addr, "-t", "not-there")
	if len(m.Topics) != 1 || m.Topics[0].Err == "" {
		t.Fatalf("kcat -L -t not-there = %+v, want an unknown-topic error", m.Topics)
	}
}

// kcat as a consumer of what franz-go produced, partition by partition.
func TestKcatReadsKgoRecords(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "mixed", 2)
	want := produceAll(t, cl, testRecords("mixed", 100))
	out, errOut, err := runCmd(t, 30*time.Second, "", kcat,
		"-b", gw.Addr, "-C", "-t", "mixed", "-o", "beginning", "-e", "-q", "-f", "%p|%o|%k|%h|%s\n")
	if err != nil {
		t.Fatalf("kcat -C: %v\nstderr: %s", err, errOut)
	}
	var got []rec
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.SplitN(l, "|", 5)
		if len(f) != 5 {
			t.Fatalf("bad kcat line %q", l)
		}
		p, _ := strconv.Atoi(f[0])
		o, _ := strconv.ParseInt(f[1], 10, 64)
		got = append(got, rec{Partition: int32(p), Offset: o, Key: f[2], Headers: f[3], Value: f[4]})
	}
	sortRecs(got)
	sameRecs(t, want, got)
}
