package handlers

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (60) and DescribeTopicPartitions (75). The answers
// checked here were compared field by field with a Kafka 4.1.1 broker's
// to the same requests.

// allClusterOps is what a broker without an authorizer answers as the
// cluster's authorized operations (Kafka 4.1.1: 8096).
const allClusterOps = 1<<kmsg.ACLOperationCreate | 1<<kmsg.ACLOperationAlter | 1<<kmsg.ACLOperationDescribe |
	1<<kmsg.ACLOperationClusterAction | 1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs |
	1<<kmsg.ACLOperationIdempotentWrite

// allTopicOps is the topic counterpart (Kafka 4.1.1: 3576).
const allTopicOps = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationCreate |
	1<<kmsg.ACLOperationDelete | 1<<kmsg.ACLOperationAlter | 1<<kmsg.ACLOperationDescribe |
	1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs

func describeClusterReq(v int16, ops bool, endpoint int8) *kmsg.DescribeClusterRequest {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.IncludeClusterAuthorizedOperations, req.EndpointType = v, ops, endpoint
	req.IncludeFencedBrokers = v >= 2
	return req
}

func TestDescribeCluster(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for v := int16(0); v <= 2; v++ {
		r := do(t, g, describeClusterReq(v, false, 1)).(*kmsg.DescribeClusterResponse)
		if r.ErrorCode != 0 || r.ErrorMessage != nil || r.ClusterID != "iggy-kafka-test" || r.ControllerID != 1 || r.EndpointType != 1 {
			t.Fatalf("v%d: %+v", v, r)
		}
		if len(r.Brokers) != 1 || r.Brokers[0].NodeID != 1 || r.Brokers[0].Host != "127.0.0.1" || r.Brokers[0].Port != 9092 ||
			r.Brokers[0].Rack != nil || r.Brokers[0].IsFenced {
			t.Fatalf("v%d brokers %+v", v, r.Brokers)
		}
		if r.ClusterAuthorizedOperations != math.MinInt32 {
			t.Fatalf("v%d: authorized operations %d not asked for", v, r.ClusterAuthorizedOperations)
		}
		r = do(t, g, describeClusterReq(v, true, 1)).(*kmsg.DescribeClusterResponse)
		if r.ClusterAuthorizedOperations != allClusterOps {
			t.Fatalf("v%d: authorized operations %b, want %b", v, r.ClusterAuthorizedOperations, allClusterOps)
		}
	}

	// The address is the one of the caller's listener, as Metadata's.
	c := newCall(g, 60, 2)
	c.Advertised = &Endpoint{Host: "gw.example", Port: 19092}
	r := roundTrip(t, c, describeClusterReq(2, false, 1)).(*kmsg.DescribeClusterResponse)
	if b := r.Brokers[0]; b.Host != "gw.example" || b.Port != 19092 {
		t.Fatalf("broker on another listener: %+v", b)
	}

	// Controllers are not served by a broker: Kafka's codes and messages.
	for _, tc := range []struct {
		v        int16
		endpoint int8
		code     int16
		msg      string
	}{
		{1, 2, kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"},
		{2, 2, kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"},
		{1, 0, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 0"},
		{2, 3, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 3"},
	} {
		r := do(t, g, describeClusterReq(tc.v, true, tc.endpoint)).(*kmsg.DescribeClusterResponse)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg || len(r.Brokers) != 0 ||
			r.ClusterID != "" || r.ControllerID != -1 || r.EndpointType != 1 || r.ClusterAuthorizedOperations != math.MinInt32 {
			t.Errorf("v%d endpoint type %d: %+v", tc.v, tc.endpoint, r)
		}
	}
	// v0 has no endpoint type field; a bad one decoded anyway would be
	// INVALID_REQUEST, as Kafka answers v0.
	s := Lookup(60)
	if s == nil {
		t.Fatal("DescribeCluster (60) is not served")
	}
	resp, err := s.Handle(newCall(g, 60, 0), describeClusterReq(0, false, 2))
	if err != nil || resp.(*kmsg.DescribeClusterResponse).ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v0 with endpoint type 2: %+v %v", resp, err)
	}
}

// With ACLs: 0 without DESCRIBE on the cluster, else what the principal
// may do.
func TestDescribeClusterAuthorizedOps(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	grant(t, g,
		acl(rtCluster, ptLit, ClusterResource, "User:ops", "*", opDesc, allow),
		acl(rtCluster, ptLit, ClusterResource, "User:ops", "*", opAlt, allow),
		acl(rtCluster, ptLit, ClusterResource, "User:writer", "*", int8(kmsg.ACLOperationIdempotentWrite), allow),
		acl(rtCluster, ptLit, ClusterResource, "User:alterer", "*", opAlt, allow),
	)
	for principal, want := range map[string]int32{
		"User:ops":     1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationAlter,
		"User:alterer": 1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationAlter, // ALTER implies DESCRIBE
		"User:writer":  0,
		"User:nobody":  0,
		"User:admin":   allClusterOps,
	} {
		r := doAs(t, g, principal, describeClusterReq(2, true, 1)).(*kmsg.DescribeClusterResponse)
		if r.ErrorCode != 0 || r.ClusterAuthorizedOperations != want || len(r.Brokers) != 1 {
			t.Errorf("%s: error %d, ops %b, want %b", principal, r.ErrorCode, r.ClusterAuthorizedOperations, want)
		}
	}
}

func describeTopicsReq(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, names ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, n := range names {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func dtpCursor(topic string, partition int32) *kmsg.DescribeTopicPartitionsRequestCursor {
	return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: partition}
}

// described lists "topic:partition" for every partition of r, and
// "topic!code" for every topic answered with an error.
func described(r *kmsg.DescribeTopicPartitionsResponse) []string {
	var out []string
	for _, t := range r.Topics {
		if t.ErrorCode != 0 {
			out = append(out, *t.Topic+"!"+kerr.ErrorForCode(t.ErrorCode).(*kerr.Error).Message)
		}
		for _, p := range t.Partitions {
			out = append(out, *t.Topic+":"+string(rune('0'+p.Partition)))
		}
	}
	return out
}

func TestDescribeTopicPartitions(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "b", 2)
	createTopic(t, g, "a", 3)
	ids := map[string][16]byte{}
	for _, mt := range do(t, g, metadataReq(12)).(*kmsg.MetadataResponse).Topics {
		ids[*mt.Topic] = mt.TopicID
	}

	// Named: sorted, once each, errors per topic, all with their
	// authorized operations; nothing is auto-created.
	r := do(t, g, describeTopicsReq(2000, nil, "b", "a", "missing", "bad name!", "a")).(*kmsg.DescribeTopicPartitionsResponse)
	want := []string{"a:0", "a:1", "a:2", "b:0", "b:1", "bad name!!INVALID_TOPIC_EXCEPTION", "missing!UNKNOWN_TOPIC_OR_PARTITION"}
	if got := described(r); !slices.Equal(got, want) || r.NextCursor != nil {
		t.Fatalf("named: %v, cursor %+v; want %v", got, r.NextCursor, want)
	}
	for _, tt := range r.Topics {
		if tt.AuthorizedOperations != allTopicOps || tt.IsInternal {
			t.Errorf("%s: authorized operations %b, internal %v", *tt.Topic, tt.AuthorizedOperations, tt.IsInternal)
		}
		if tt.ErrorCode != 0 {
			if tt.TopicID != ([16]byte{}) || tt.Partitions == nil {
				t.Errorf("%s: id %x, partitions %v", *tt.Topic, tt.TopicID, tt.Partitions)
			}
			continue
		}
		if tt.TopicID != ids[*tt.Topic] {
			t.Errorf("%s: topic id %x, Metadata's %x", *tt.Topic, tt.TopicID, ids[*tt.Topic])
		}
		for _, p := range tt.Partitions {
			if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.Replicas, []int32{1}) ||
				!slices.Equal(p.ISR, []int32{1}) || p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 ||
				p.LastKnownELR == nil || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
				t.Errorf("%s: partition %+v", *tt.Topic, p)
			}
		}
	}
	if topicExists(g, "missing") {
		t.Fatal("DescribeTopicPartitions created a topic")
	}
	// An unknown internal name is answered with Kafka's flag on the name.
	r = do(t, g, describeTopicsReq(10, nil, "__consumer_offsets")).(*kmsg.DescribeTopicPartitionsResponse)
	if tt := r.Topics[0]; tt.ErrorCode != kerr.UnknownTopicOrPartition.Code || !tt.IsInternal {
		t.Fatalf("__consumer_offsets: %+v", tt)
	}

	// Pagination: following NextCursor visits every partition once.
	for _, limit := range []int32{1, 2, 3, 4, 5, -5, 0} {
		var got []string
		var cur *kmsg.DescribeTopicPartitionsRequestCursor
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: no end", limit)
			}
			r := do(t, g, describeTopicsReq(limit, cur, "a", "b")).(*kmsg.DescribeTopicPartitionsResponse)
			n := 0
			for _, tt := range r.Topics {
				n += len(tt.Partitions)
			}
			if n > max(int(limit), 1) {
				t.Fatalf("limit %d: %d partitions in one answer", limit, n)
			}
			got = append(got, described(r)...)
			if r.NextCursor == nil {
				break
			}
			cur = dtpCursor(r.NextCursor.Topic, r.NextCursor.Partition)
		}
		if want := []string{"a:0", "a:1", "a:2", "b:0", "b:1"}; !slices.Equal(got, want) {
			t.Errorf("limit %d: %v", limit, got)
		}
	}
	cursorOf := func(r *kmsg.DescribeTopicPartitionsResponse) string {
		if r.NextCursor == nil {
			return "none"
		}
		return r.NextCursor.Topic + ":" + string(rune('0'+r.NextCursor.Partition))
	}
	for _, tc := range []struct {
		req        *kmsg.DescribeTopicPartitionsRequest
		want       []string
		nextCursor string
	}{
		// A topic cut short names its next partition; one that fits
		// exactly names the next topic at 0.
		{describeTopicsReq(2, nil, "a", "b"), []string{"a:0", "a:1"}, "a:2"},
		{describeTopicsReq(3, nil, "a", "b"), []string{"a:0", "a:1", "a:2"}, "b:0"},
		// Unknown topics do not count against the limit, but once it is
		// reached the next topic is the cursor, known or not.
		{describeTopicsReq(4, nil, "a", "aa", "b"), []string{"a:0", "a:1", "a:2", "aa!UNKNOWN_TOPIC_OR_PARTITION", "b:0"}, "b:1"},
		{describeTopicsReq(3, nil, "a", "aa", "b"), []string{"a:0", "a:1", "a:2"}, "aa:0"},
		{describeTopicsReq(2, dtpCursor("a", 1), "a", "b"), []string{"a:1", "a:2"}, "b:0"},
		// Names below the cursor's are left out.
		{describeTopicsReq(2, dtpCursor("b", 0), "a", "b"), []string{"b:0", "b:1"}, "none"},
		// A cursor past the topic's partitions: none of it. (Kafka 4.1.1
		// overflows at MaxInt32 and names a negative partition.)
		{describeTopicsReq(2, dtpCursor("a", 10), "a", "b"), []string{"b:0", "b:1"}, "none"},
		{describeTopicsReq(2, dtpCursor("a", math.MaxInt32), "a", "b"), []string{"b:0", "b:1"}, "none"},
		// None named: every topic, from the cursor on.
		{describeTopicsReq(1, nil), []string{"a:0"}, "a:1"},
		{describeTopicsReq(-5, dtpCursor("b", 0)), []string{"b:0"}, "b:1"},
		{describeTopicsReq(100, dtpCursor("aa", 0)), []string{"b:0", "b:1"}, "none"},
		{describeTopicsReq(100, dtpCursor("a", -1)), nil, "none"},
		// A bad cursor: INVALID_REQUEST on every named topic, in request
		// order.
		{describeTopicsReq(2, dtpCursor("x", 0), "b", "a", "b"), []string{"b!INVALID_REQUEST", "a!INVALID_REQUEST", "b!INVALID_REQUEST"}, "none"},
		{describeTopicsReq(2, dtpCursor("a", -1), "a", "b"), []string{"a!INVALID_REQUEST", "b!INVALID_REQUEST"}, "none"},
		{describeTopicsReq(2, dtpCursor("", 0), "a"), []string{"a!INVALID_REQUEST"}, "none"},
	} {
		r := do(t, g, tc.req).(*kmsg.DescribeTopicPartitionsResponse)
		if got := described(r); !slices.Equal(got, tc.want) || cursorOf(r) != tc.nextCursor {
			t.Errorf("limit %d cursor %+v topics %v: %v next %s; want %v next %s", tc.req.ResponsePartitionLimit, tc.req.Cursor,
				tc.req.Topics, got, cursorOf(r), tc.want, tc.nextCursor)
		}
		for _, tt := range r.Topics {
			if tt.ErrorCode == kerr.InvalidRequest.Code && tt.AuthorizedOperations != math.MinInt32 {
				t.Errorf("bad cursor: authorized operations %d", tt.AuthorizedOperations)
			}
		}
	}
}

// With ACLs: a named topic without DESCRIBE is refused after the others;
// with none named it is left out.
func TestDescribeTopicPartitionsAuthorization(t *testing.T) {
	t.Parallel()
	g := aliceGateway(t, 2, opDesc)
	r := doAs(t, g, "User:alice", describeTopicsReq(2000, nil, "B", "A", "C")).(*kmsg.DescribeTopicPartitionsResponse)
	want := []string{"A:0", "A:1", "B!TOPIC_AUTHORIZATION_FAILED", "C!TOPIC_AUTHORIZATION_FAILED"}
	if got := described(r); !slices.Equal(got, want) {
		t.Fatalf("named: %v, want %v", got, want)
	}
	if ops := r.Topics[0].AuthorizedOperations; ops != 1<<kmsg.ACLOperationDescribe {
		t.Errorf("A: authorized operations %b", ops)
	}
	for _, tt := range r.Topics[1:] {
		if tt.TopicID != ([16]byte{}) || tt.AuthorizedOperations != math.MinInt32 {
			t.Errorf("%s refused: %+v", *tt.Topic, tt)
		}
	}
	r = doAs(t, g, "User:alice", describeTopicsReq(2000, nil)).(*kmsg.DescribeTopicPartitionsResponse)
	if got := described(r); !slices.Equal(got, []string{"A:0", "A:1"}) {
		t.Fatalf("all topics: %v", got)
	}
}
