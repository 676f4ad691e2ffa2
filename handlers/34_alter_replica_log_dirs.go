// AlterReplicaLogDirs: v1-2
//
// Behavior:
//   - Moves replicas between a broker's log dirs (`kafka-reassign-partitions`
//     with log dirs, Admin.alterReplicaLogDirs). The gateway has one log
//     dir, "iggy:<stream>" (DescribeLogDirs), holding every partition: a
//     partition asked into it is already there (no error, nothing moves);
//     any other dir is LOG_DIR_NOT_FOUND, as Kafka answers a dir it does
//     not have. A topic or partition that does not exist is
//     UNKNOWN_TOPIC_OR_PARTITION (Kafka 4 remembers the dir for a replica
//     not created yet; here every partition lives in the one dir anyway).
//   - Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
//     partition), as Kafka.
//   - Partitions named twice (in two dirs) are answered once each, in the
//     order asked; the last dir named wins, as a Kafka broker keeps the
//     last entry.
//
// Version notes:
//   - v0 is not served (Kafka 4 removed it, KIP-896); v2 is flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 34, MinVersion: 1, MaxVersion: 2, Handle: typed(alterReplicaLogDirs)})
}

func alterReplicaLogDirs(c *Call, req *kmsg.AlterReplicaLogDirsRequest, resp *kmsg.AlterReplicaLogDirsResponse) (kmsg.Response, error) {
	type tp struct {
		topic     string
		partition int32
	}
	dirOf := map[tp]string{}
	var order []tp
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, seen := dirOf[k]; !seen {
					order = append(order, k)
				}
				dirOf[k] = d.Dir
			}
		}
	}
	allowed := c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource)
	ours := "iggy:" + c.G.Cfg.Stream
	byTopic := map[string]int{}
	for _, k := range order {
		code := int16(0)
		switch {
		case !allowed:
			code = kerr.ClusterAuthorizationFailed.Code
		case dirOf[k] != ours:
			code = kerr.LogDirNotFound.Code
		default:
			ti, err := c.topic(k.topic, false)
			code = errCode(err, opMeta)
			if code == 0 && (k.partition < 0 || k.partition >= ti.Partitions) {
				code = kerr.UnknownTopicOrPartition.Code
			}
		}
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[k.topic] = i
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = k.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = k.partition, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}
