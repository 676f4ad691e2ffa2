package iggy

import (
	"context"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
)

// Transactional batches and transaction markers as the mapping writes
// them are accepted by both servers (checksums, stamping, headers) and
// read back as the Kafka transactional and control batches they were.
func TestTransactionalRecordsStored(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.topic(t, "txn", 1)
		var bb codec.BatchBuilder
		kb := bb.Begin(nil, 0, 1_700_000_000_000)
		bb.Producer(42, 3, 0)
		bb.Transactional()
		for i, v := range []string{"v0", "v1"} {
			kb = bb.AppendRecord(kb, int32(i), int64(i), nil, []byte(v), 0)
		}
		kb = bb.Finish(kb)
		rb, _, err := codec.ParseBatch(kb)
		if err != nil {
			t.Fatal(err)
		}
		data, stats, err := bridge.IggyFormat.Encode(nil, rb, rb.Records, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.AppendStaged(ctx, e.stream, "txn", 0, data, stats.Prepared); err != nil {
			t.Fatal(err)
		}
		mk, mstats, err := bridge.IggyFormat.EncodeMarker(nil, bridge.Marker{ProducerID: 42, Epoch: 3, Commit: true, CoordinatorEpoch: 1, TimestampMs: 1_700_000_000_005})
		if err != nil {
			t.Fatal(err)
		}
		if base, _, err := e.store.AppendStaged(ctx, e.stream, "txn", 0, mk, mstats.Prepared); err != nil || base != 2 {
			t.Fatalf("marker appended at %d: %v", base, err)
		}
		cur := bridge.FetchCursor{MaxBytes: 1 << 20}
		var out []byte
		var scanned []string
		err = e.store.Poll(ctx, e.stream, "txn", 0, 0, 1<<20, func(b []byte) bool {
			if out, _, err = bridge.IggyFormat.AppendKafka(out, b, &cur); err != nil {
				t.Error(err)
			}
			if err := bridge.ScanProducerRecords(b, func(o uint64, ps bridge.ProducerSeq, control, commit bool) bool {
				scanned = append(scanned, fmt.Sprintf("%d:%d/%d/%d/%v/%v", o, ps.ProducerID, ps.Epoch, ps.Sequence, control, commit))
				return true
			}); err != nil {
				t.Error(err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(scanned) != "[0:42/3/0/false/false 1:42/3/1/false/false 2:42/3/-1/true/true]" {
			t.Fatalf("scanned %v", scanned)
		}
		var got []string
		for rest := out; len(rest) > 0; {
			b, n, err := codec.ParseBatch(rest)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%#x/%d/%d/%d/%d", b.BaseOffset, b.Attributes, b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.NumRecords))
			rest = rest[n:]
		}
		if fmt.Sprint(got) != "[0:0x10/42/3/0/2 2:0x30/42/3/-1/1]" || cur.Controls != 1 || cur.Records != 3 {
			t.Fatalf("fetched %v, cursor %+v", got, cur)
		}
	})
}
