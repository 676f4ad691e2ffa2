package embedded

import (
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// A staged append is written at once and becomes visible (and durable)
// only when its durability wait returns, under SyncAlways; under the other
// policies it is visible once written and there is nothing to wait for.
// The batch's times come from the caller (here: from verification, as the
// encoder's are checked to be the same).
func TestAppendStaged(t *testing.T) {
	t.Parallel()
	for _, policy := range []SyncPolicy{SyncAlways, SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{Sync: policy, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CreateTopic(ctx, "kafka", "st", 1); err != nil {
				t.Fatal(err)
			}
			b := makeBatch(t, "x", 4, 1_000_000)
			v, err := bridge.VerifyIggyBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			base, durable, err := s.AppendStaged(ctx, "kafka", "st", 0, b, bridge.Prepared{Times: v.Times})
			if err != nil || base != 0 {
				t.Fatalf("staged: base %d, %v", base, err)
			}
			st, _ := s.Partition(ctx, "kafka", "st", 0)
			if policy == SyncAlways {
				if durable == nil || st.Next != 0 {
					t.Fatalf("before the wait: durable %v, watermark %d; want a wait and 0", durable != nil, st.Next)
				}
				if err := durable(ctx); err != nil {
					t.Fatal(err)
				}
			} else if durable != nil || st.Next != 4 {
				t.Fatalf("written: durable %v, watermark %d; want none and 4", durable != nil, st.Next)
			}
			if st, _ = s.Partition(ctx, "kafka", "st", 0); st.Next != 4 {
				t.Fatalf("watermark %d after the wait, want 4", st.Next)
			}
			var got int
			if err := s.Poll(ctx, "kafka", "st", 0, 0, 1<<20, func(b []byte) bool {
				bv, err := bridge.VerifyIggyBatch(b)
				if err != nil {
					t.Fatal(err)
				}
				got += int(bv.Count)
				return true
			}); err != nil || got != 4 {
				t.Fatalf("polled %d messages, %v", got, err)
			}
		})
	}
}
