package e2e

// Share groups with franz-go's share consumer (kgo.ShareGroup): what a
// share group reads of transactional data, by share.isolation.level.

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setShareGroupConfigs sets group configs on a share group the way an
// admin does (IncrementalAlterConfigs on a GROUP resource).
func setShareGroupConfigs(t *testing.T, cl *kgo.Client, group string, kv ...string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = 32, group // GROUP
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	alter.Resources = append(alter.Resources, r)
	resp, err := alter.RequestWith(adminCtx(t), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("altering %s's configs: %v %+v", group, err, resp)
	}
}

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

	setShareGroupConfigs(t, admin, "share-rc-committed", "share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed")
	setShareGroupConfigs(t, admin, "share-rc-all", "share.auto.offset.reset", "earliest")

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
