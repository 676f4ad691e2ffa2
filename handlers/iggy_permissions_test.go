package handlers

import (
	"context"
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// permsTable allows what its map says and books every question.
type permsTable struct {
	allow map[bridge.Act]string // act -> the one topic it is allowed on
	asked []bridge.Act
}

func (p *permsTable) Allow(_ context.Context, user string, act bridge.Act, stream, topic string) bool {
	p.asked = append(p.asked, act)
	return user == "iggyuser" && stream == "kafka" && p.allow[act] == topic
}

// A PLAIN client checked by Iggy is held to its Iggy user's permissions for
// topic operations and cluster CREATE, with each Kafka operation mapped to
// the Iggy act docs/SECURITY.md names; group operations are not asked
// about. A PLAIN login against the users file (the embedded backend) is
// not an Iggy user and is never asked about.
func TestAuthorizedIggyPermissions(t *testing.T) {
	t.Parallel()
	perms := &permsTable{allow: map[bridge.Act]string{bridge.ActSend: "a", bridge.ActPoll: "b", bridge.ActCreate: ""}}
	g := saslGateway(t, func(sc *SaslConfig) {
		sc.Plain = func(_ context.Context, user, pw string) (bool, error) { return user == "iggyuser" && pw == "pw", nil }
		sc.Permissions = perms
	})
	g.Cfg.Stream = "kafka"
	s := NewSaslConn(netip.MustParseAddr("10.0.2.1"))
	handshake(t, g, s, MechPlain, 1)
	if a, _, _ := authenticate(t, g, s, []byte("\x00iggyuser\x00pw"), 1); a.ErrorCode != 0 {
		t.Fatalf("login: %+v", a)
	}
	c := saslCall(g, s, 0, 9)
	for _, k := range []struct {
		op   kmsg.ACLOperation
		rt   kmsg.ACLResourceType
		name string
		want bool
		act  bridge.Act
	}{
		{kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "a", true, bridge.ActSend},
		{kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "b", false, bridge.ActSend},
		{kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "b", true, bridge.ActPoll},
		{kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActPoll},
		{kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActDescribe},
		{kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActDescribe},
		{kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActManage},
		{kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActManage},
		{kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActManage},
		{kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, "a", false, bridge.ActCreate}, // the cache judges create on the stream; this table by name
		{kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, ClusterResource, true, bridge.ActCreate},
	} {
		perms.asked = nil
		if got := c.Authorized(k.op, k.rt, k.name); got != k.want || len(perms.asked) != 1 || perms.asked[0] != k.act {
			t.Errorf("%v on %v %q: %v asking %v, want %v asking [%d]", k.op, k.rt, k.name, got, perms.asked, k.want, k.act)
		}
	}
	perms.asked = nil
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "grp") ||
		!c.Authorized(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, ClusterResource) || len(perms.asked) != 0 {
		t.Errorf("group and idempotent-write checks asked %v", perms.asked)
	}

	// OffsetForLeaderEpoch: CLUSTER_ACTION (every principal's with ACLs
	// off) covers every topic for the ACLs, never for Iggy.
	perms.allow[bridge.ActDescribe] = "b"
	oe := roundTrip(t, saslCall(g, s, 23, 4), leaderEpochReq(4, epochAsk{"a", 0, -1, 0}, epochAsk{"b", 0, -1, 0})).(*kmsg.OffsetForLeaderEpochResponse)
	if len(oe.Topics) != 2 || oe.Topics[0].Topic != "b" || oe.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		oe.Topics[1].Topic != "a" || oe.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("OffsetForLeaderEpoch as an Iggy user allowed to describe b only: %+v", oe.Topics)
	}
	perms.asked = nil

	// The users file's PLAIN (no Plain checker): ACLs only.
	g2 := saslGateway(t, func(sc *SaslConfig) { sc.Permissions = perms })
	s2 := NewSaslConn(netip.MustParseAddr("10.0.2.2"))
	handshake(t, g2, s2, MechPlain, 1)
	if a, _, _ := authenticate(t, g2, s2, []byte("\x00alice\x00pw"), 1); a.ErrorCode != 0 {
		t.Fatalf("users-file login: %+v", a)
	}
	if !saslCall(g2, s2, 0, 9).Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "b") || len(perms.asked) != 0 {
		t.Errorf("a users-file PLAIN login was held to Iggy permissions (asked %v)", perms.asked)
	}
}
