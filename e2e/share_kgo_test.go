package e2e

// Share groups with franz-go's share consumer (kgo.ShareGroup): what a
// share group reads of transactional data, by share.isolation.level.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shareReadAll reads with a share consumer of group until want records
// came (accepting each) and one more short poll brought nothing, and
// returns their values, sorted.
func shareReadAll(t *testing.T, addr, group, topic string, want int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(got) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	defer scancel()
	cl.PollFetches(sctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	sort.Strings(got)
	return got
}

// TestShareGroupReadCommitted: a transactional producer commits one
// transaction and aborts the next on a one-partition topic, then writes
// one record outside any transaction. A share group with
// share.isolation.level=read_committed gets exactly the committed records
// and the plain one (the aborted ones and the markers are archived as
// the share partition passes them); a read_uncommitted share group gets
// every data record.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withTransactions(2))
	const topic = "share-rc"
	admin := newClient(t, gw.Addr)
	createTopic(t, admin, topic, 1)
	p := newClient(t, gw.Addr, kgo.TransactionalID("share-rc-tx"), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txn := func(tag string, commit kgo.TransactionEndTry) {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", tag, i))).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", tag, err)
			}
		}
		if err := p.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end %s: %v", tag, err)
		}
	}
	txn("committed", kgo.TryCommit)
	txn("aborted", kgo.TryAbort)
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	setGroupConfigs(t, admin, "share-rc-committed", "share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed")
	setGroupConfigs(t, admin, "share-rc-all", "share.auto.offset.reset", "earliest")

	committed := shareReadAll(t, gw.Addr, "share-rc-committed", topic, 6)
	want := []string{"committed-0", "committed-1", "committed-2", "committed-3", "committed-4", "plain"}
	if fmt.Sprint(committed) != fmt.Sprint(want) {
		t.Errorf("read_committed share group got %v, want %v", committed, want)
	}
	all := shareReadAll(t, gw.Addr, "share-rc-all", topic, 11)
	if len(all) != 11 {
		t.Errorf("read_uncommitted share group got %d records %v, want the 11 data records", len(all), all)
	}
}

// TestShareGroupMetrics: after a share consumer accepted 20 records,
// /metrics counts 20 deliveries, 20 accepts, one share group and the
// state writes that made the accepts durable.
func TestShareGroupMetrics(t *testing.T) {
	t.Parallel()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	gw := spawnGateway(t, t.TempDir(), "--metrics-addr="+metricsAddr)
	const topic, group = "share-metrics", "share-metrics-g"
	admin := newClient(t, gw.Addr)
	createTopic(t, admin, topic, 1)
	for i := range 20 {
		if err := admin.ProduceSync(adminCtx(t), &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "m%02d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest")
	if got := shareReadAll(t, gw.Addr, group, topic, 20); len(got) != 20 {
		t.Fatalf("share consumer got %d records, want 20", len(got))
	}
	want := map[string]int{"iggy_kafka_share_acquired_records_total": 20, "iggy_kafka_share_accepted_records_total": 20, "iggy_kafka_share_groups": 1}
	line := regexp.MustCompile(`(?m)^(iggy_kafka_share_\w+) (\d+)$`)
	await.Until(t, 10*time.Second, func() error {
		got := map[string]int{}
		for _, m := range line.FindAllStringSubmatch(metricsText(t, metricsAddr), -1) {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
			}
		}
		if got["iggy_kafka_share_state_writes_total"] < 1 {
			return fmt.Errorf("no state writes counted: %v", got)
		}
		return nil
	})
}
