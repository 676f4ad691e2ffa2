// DescribeLogDirs: v1-5
//
// Behavior:
//   - One log dir, named "iggy:<stream>" (the Iggy stream holding the
//     Kafka topics), holding every partition of every topic (a null topic
//     list) or of the topics and partitions named; unknown ones are left
//     out, as a broker leaves out what it does not host.
//   - Size per partition from the store (Backend.PartitionSizes): on the
//     embedded store pebble's on-disk estimate of the partition's key range
//     (or the bytes appended since start when that is more); on Iggy the
//     partition's size_bytes from GetTopic. Records below a DeleteRecords
//     start count until they are really gone. OffsetLag 0, IsFuture false.
//   - v4 TotalBytes and UsableBytes are -1 (unknown: the volume is Iggy's
//     or pebble's, not a broker's).
//   - A store failure is KAFKA_STORAGE_ERROR on the dir (and at the top
//     level from v3).
//
// Version notes:
//   - v2 is flexible; v3 adds the top-level error code; v4 total and
//     usable bytes; v5 whether a dir is cordoned (new replicas kept off
//     it): the one dir never is.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 35, MinVersion: 1, MaxVersion: 5, Handle: typed(describeLogDirs)})
}

func describeLogDirs(c *Call, req *kmsg.DescribeLogDirsRequest, resp *kmsg.DescribeLogDirsResponse) (kmsg.Response, error) {
	g := c.G
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = "iggy:" + g.Cfg.Stream
	dir.TotalBytes, dir.UsableBytes = -1, -1
	fail := func() (kmsg.Response, error) {
		dir.ErrorCode = kerr.KafkaStorageError.Code
		dir.Topics = nil
		resp.Dirs = append(resp.Dirs, dir)
		if req.Version >= 3 {
			resp.ErrorCode = kerr.KafkaStorageError.Code
		}
		return resp, nil
	}
	if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
		// Kafka: no dirs, and the error where the version has a field.
		resp.Dirs = []kmsg.DescribeLogDirsResponseDir{}
		if req.Version >= 3 {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp, nil
	}

	// wanted: nil = every partition of the topic.
	type want struct {
		topic string
		parts []int32
	}
	var wants []want
	if req.Topics == nil {
		ts, err := g.Store.Topics(c.Ctx, g.Cfg.Stream)
		if err != nil {
			return fail()
		}
		for _, t := range ts {
			wants = append(wants, want{topic: t.Name})
		}
	} else {
		// A topic named twice is answered once, with the union of its
		// partitions.
		idx := make(map[string]int, len(req.Topics))
		for _, rt := range req.Topics {
			i, ok := idx[rt.Topic]
			if !ok {
				i = len(wants)
				idx[rt.Topic] = i
				wants = append(wants, want{topic: rt.Topic, parts: []int32{}})
			}
			wants[i].parts = append(wants[i].parts, rt.Partitions...)
		}
	}
	for _, w := range wants {
		if !validTopicName(w.topic) {
			continue
		}
		// One store call per topic: the sizes also give the partition
		// count (on Iggy each is a GetTopic).
		sizes, err := g.Store.PartitionSizes(c.Ctx, g.Cfg.Stream, w.topic)
		if err != nil {
			if errCode(err, opAdmin) == kerr.UnknownTopicOrPartition.Code {
				continue
			}
			return fail()
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = w.topic
		add := func(p int32) {
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p, sizes[p]
			dt.Partitions = append(dt.Partitions, dp)
		}
		if w.parts == nil {
			for p := range int32(len(sizes)) {
				add(p)
			}
		} else {
			seen := make(map[int32]bool, len(w.parts))
			for _, p := range w.parts {
				if p >= 0 && int(p) < len(sizes) && !seen[p] {
					seen[p] = true
					add(p)
				}
			}
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
