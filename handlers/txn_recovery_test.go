package handlers

import (
	"bytes"
	"context"
	"testing"

	"github.com/iggy-kafka/gateway/txn"
)

// TestFindMarkerPastOnePoll: a restart finishing a transaction looks for
// its marker from where the transaction started to the partition's end,
// however much was stored in between (more than one Poll returns), so the
// marker is not written twice.
func TestFindMarkerPastOnePoll(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "fm", 1)
	big := bytes.Repeat([]byte("x"), 200<<10)
	for range 8 { // 1.6 MB before the marker
		if r := produceOne(t, g, produceReq(9, "fm", 0, batch(rec{key: []byte("k"), value: big}))); r.ErrorCode != 0 {
			t.Fatalf("produce: %d", r.ErrorCode)
		}
	}
	ctx := context.Background()
	env := txnEnv{g}
	p := txn.Partition{Topic: "fm"}
	at, err := env.WriteMarker(ctx, p, 77, 2, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	got, commit, found, err := env.FindMarker(ctx, p, 0, 77, 2)
	if err != nil || !found || got != at || !commit {
		t.Fatalf("FindMarker from 0: %d commit %v found %v %v, want the commit marker at %d", got, commit, found, err, at)
	}
	if _, _, found, err := env.FindMarker(ctx, p, 0, 77, 1); err != nil || !found {
		t.Fatalf("FindMarker of an earlier epoch (the marker's is a bump past it): found %v, %v", found, err)
	}
	if _, _, found, err := env.FindMarker(ctx, p, 0, 77, 3); err != nil || found {
		t.Fatalf("FindMarker of a later epoch: found %v, %v", found, err)
	}
	if _, _, found, err := env.FindMarker(ctx, p, at+1, 77, 2); err != nil || found {
		t.Fatalf("FindMarker past the marker: found %v, %v", found, err)
	}
}
