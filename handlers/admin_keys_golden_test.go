package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin keys' response bodies are pinned byte for byte at their
// highest version, from a fixed scenario (fields that carry a clock are
// zeroed first). Regenerate with: go test ./handlers -run Golden -update
func TestGoldenAdminKeys(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "gold", 1)
	if p := produceIdem(t, g, "gold", idemBatch(4242, 1, 0, 3, "g")); p.ErrorCode != 0 {
		t.Fatal(p)
	}

	cp := createPartitionsReq(3, false, cpTopic("gold", 3), cpTopic("gold-missing", 2), cpTopic("gold", 1))
	cp.Topics = cp.Topics[:2]
	cp2 := createPartitionsReq(3, true, cpTopic("gold", 2))

	ld := kmsg.NewPtrDescribeLogDirsRequest()
	ld.Version = 4
	ldt := kmsg.NewDescribeLogDirsRequestTopic()
	ldt.Topic, ldt.Partitions = "gold", []int32{1, 2}
	ld.Topics = append(ld.Topics, ldt)

	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = "gold", []int32{0, 9}
	dp.Topics = append(dp.Topics, dpt)

	cq := kmsg.NewPtrDescribeClientQuotasRequest()
	cq.Version = 1
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.Version = 2
	lt.StateFilters = []string{"Ongoing", "Nope"}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}

	dc := describeClusterReq(2, true, 1)
	dtp := describeTopicsReq(2000, nil, "gold", "gold-missing")

	cases := []struct {
		file string
		req  kmsg.Request
	}{
		{"37_create_partitions_v3_resp.hex", cp},
		{"37_create_partitions_v3_validate_resp.hex", cp2},
		{"21_delete_records_v2_resp.hex", deleteRecordsReq(2, "gold", map[int32]int64{0: 2})},
		{"35_describe_log_dirs_v4_resp.hex", ld},
		{"61_describe_producers_v0_resp.hex", dp},
		{"48_describe_client_quotas_v1_resp.hex", cq},
		{"66_list_transactions_v2_resp.hex", lt},
		{"65_describe_transactions_v0_resp.hex", dt},
		{"60_describe_cluster_v2_resp.hex", dc},
		{"75_describe_topic_partitions_v0_resp.hex", dtp},
	}
	for _, tc := range cases {
		resp := do(t, g, tc.req)
		if r, ok := resp.(*kmsg.DescribeProducersResponse); ok {
			for i := range r.Topics {
				for j := range r.Topics[i].Partitions {
					for k := range r.Topics[i].Partitions[j].ActiveProducers {
						r.Topics[i].Partitions[j].ActiveProducers[k].LastTimestamp = 0
					}
				}
			}
		}
		if !wireGolden(t, tc.file, resp) {
			t.Logf("%s: %+v", tc.file, resp)
		}
	}
}
