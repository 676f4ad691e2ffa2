package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterReplicaLogDirs: a partition asked into the one log dir is
// there already; another dir is LOG_DIR_NOT_FOUND; a partition that does
// not exist UNKNOWN_TOPIC_OR_PARTITION.
func TestAlterReplicaLogDirs(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "ld", 2)
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = 2
	add := func(dir, topic string, parts ...int32) {
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		dt.Topic, dt.Partitions = topic, parts
		d.Topics = append(d.Topics, dt)
		req.Dirs = append(req.Dirs, d)
	}
	add("iggy:kafka", "ld", 0, 5)
	add("/var/kafka-logs", "ld", 1)
	add("iggy:kafka", "missing", 0)
	resp := do(t, g, req).(*kmsg.AlterReplicaLogDirsResponse)
	got := map[string]map[int32]int16{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = map[int32]int16{}
		for _, p := range rt.Partitions {
			got[rt.Topic][p.Partition] = p.ErrorCode
		}
	}
	want := map[string]map[int32]int16{
		"ld":      {0: 0, 5: kerr.UnknownTopicOrPartition.Code, 1: kerr.LogDirNotFound.Code},
		"missing": {0: kerr.UnknownTopicOrPartition.Code},
	}
	for topic, ps := range want {
		for p, code := range ps {
			if got[topic][p] != code {
				t.Errorf("%s/%d: code %d, want %d (all: %v)", topic, p, got[topic][p], code, got)
			}
		}
	}
}
