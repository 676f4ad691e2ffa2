package txn

import (
	"testing"
)

// FuzzStateRecords: stored records of any bytes decode or are refused,
// never panic, and what decodes encodes back alike.
func FuzzStateRecords(f *testing.F) {
	e := &txnEntry{id: "x", pid: 7, epoch: 3, lastPid: -1, lastEpoch: -1, timeoutMs: 900, state: Ongoing,
		startMs: 11, updateMs: 12, parts: map[Partition]uint64{pa: 4, pb: 9}, groups: map[string]struct{}{"g": {}}}
	f.Add(e.encode(), encodeOffsets(map[string][]Offset{"g": {{Partition: pa, Offset: 5, LeaderEpoch: 2, Metadata: "m"}}}))
	f.Add([]byte{1}, []byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, entry, offs []byte) {
		if got, err := decodeEntry("id", entry); err == nil {
			again, err := decodeEntry("id", got.encode())
			if err != nil || string(again.encode()) != string(got.encode()) {
				t.Fatalf("entry does not round trip: %v", err)
			}
		}
		if got, err := decodeOffsets(offs); err == nil {
			if _, err := decodeOffsets(encodeOffsets(got)); err != nil {
				t.Fatalf("offsets do not round trip: %v", err)
			}
		}
		_, _, _ = parseAborted(keyAborted+string(entry), offs)
	})
}
