package main

import (
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/bench"
)

func names(ws []bench.Workload) string {
	var n []string
	for _, w := range ws {
		n = append(n, w.Name)
	}
	return strings.Join(n, ",")
}

func TestPickWorkloads(t *testing.T) {
	t.Parallel()
	set := bench.DefaultWorkloads(true)
	perf := workloadGroups(true)
	got, err := pickWorkloads(set, perf, "")
	if err != nil || names(got) != names(set) {
		t.Errorf("no names: %s (%v), want the set alone", names(got), err)
	}
	got, err = pickWorkloads(set, perf, "perf")
	if err != nil || names(got) != "perf-produce-100B,perf-produce-1KiB,perf-consume-100B,perf-consume-1KiB" {
		t.Errorf("perf: %s (%v)", names(got), err)
	}
	got, err = pickWorkloads(set, perf, "perf-consume-1KiB, produce-100B")
	if err != nil || names(got) != "produce-100B,perf-consume-1KiB" {
		t.Errorf("two names: %s (%v)", names(got), err)
	}
	got, err = pickWorkloads(set, perf, "txn,produce-100B")
	if err != nil || names(got) != "produce-100B,idem-produce-100B,txn-produce-100B,idem-produce-1KiB,txn-produce-1KiB,idem-produce-100B-4prod,txn-produce-100B-4prod,txn-consume-100B-uncommitted,txn-consume-100B-committed" {
		t.Errorf("txn: %s (%v)", names(got), err)
	}
	got, err = pickWorkloads(set, perf, "share")
	if err != nil || names(got) != "share-100B-4cons-1p,share-100B-16cons-4p" {
		t.Errorf("share: %s (%v)", names(got), err)
	}
	if _, err := pickWorkloads(set, perf, "produce-100B,perf-produce-10B"); err == nil || !strings.Contains(err.Error(), "perf-produce-10B") {
		t.Errorf("an unknown name: %v", err)
	}
}
