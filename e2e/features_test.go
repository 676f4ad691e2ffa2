package e2e

// The feature flags (KIP-584) the gateway advertises in ApiVersions: what
// Kafka's own kafka-features tool shows, and the v3 and v4 answers on the
// wire.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// featureLine, shareLine and streamsLine are kafka-features describe's
// lines for group.version, share.version and streams.version as the
// gateway serves them (Kafka 4.4's tool pads the columns with spaces; 4.1
// put tabs between them).
var (
	featureLine = regexp.MustCompile(`(?m)^Feature: group\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+$`)
	shareLine   = regexp.MustCompile(`(?m)^Feature: share\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 2\s+FinalizedVersionLevel: 2\s+Epoch: \d+$`)
	streamsLine = regexp.MustCompile(`(?m)^Feature: streams\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+$`)
)

// kafka-features describe (Kafka 4.4.0's FeatureCommand, through the Java
// AdminClient's describeFeatures) lists exactly the features served:
// group.version, supported 0-1, finalized at 1, share.version, supported
// 0-2, finalized at 2, and streams.version, supported 0-1, finalized at 1
// (Kafka 4.4's defaults), with an epoch.
func TestJavaKafkaFeaturesDescribe(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	out, _ := kafkaTool(t, gw.Addr, "org.apache.kafka.tools.FeatureCommand", "describe")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !featureLine.MatchString(lines[0]) || !shareLine.MatchString(lines[1]) || !streamsLine.MatchString(lines[2]) {
		t.Fatalf("kafka-features describe printed:\n%s\nwant a line for group.version, share.version and streams.version", out)
	}
}

// ApiVersions v3 and v4 on one connection, as Kafka 4.x answers them:
// finalized group.version 1, share.version 2 and streams.version 1 with an
// epoch >= 0 in
// both; the supported ranges (both from 0) only at v4 (KIP-1022: a v3 client is not sent a range starting
// at 0); nothing at v2, which has no such fields.
func TestApiVersionsFeaturesWire(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	w := dialWire(t, gw.Addr)
	var epoch int64 = -1
	for i, v := range []int16{2, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
		resp := w.roundTrip(req, v, int32(i+1)).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := describeFeatures(resp)
		want := map[int16]string{
			2: "supported [] finalized [] epoch -1",
			3: "supported [] finalized [group.version=1-1 share.version=2-2 streams.version=1-1] epoch E",
			4: "supported [group.version=0-1 share.version=0-2 streams.version=0-1] finalized [group.version=1-1 share.version=2-2 streams.version=1-1] epoch E",
		}[v]
		if v >= 3 && resp.FinalizedFeaturesEpoch >= 0 {
			if epoch < 0 {
				epoch = resp.FinalizedFeaturesEpoch
			}
			if resp.FinalizedFeaturesEpoch != epoch {
				t.Errorf("v%d: epoch %d, the v3 answer's %d", v, resp.FinalizedFeaturesEpoch, epoch)
			}
			got = strings.Replace(got, "epoch "+strconv.FormatInt(epoch, 10), "epoch E", 1)
		}
		if got != want {
			t.Errorf("v%d: %s\nwant %s", v, got, want)
		}
	}
}

// describeFeatures prints the feature fields of an ApiVersions answer.
func describeFeatures(resp *kmsg.ApiVersionsResponse) string {
	var sup, fin []string
	for _, f := range resp.SupportedFeatures {
		sup = append(sup, f.Name+"="+strconv.Itoa(int(f.MinVersion))+"-"+strconv.Itoa(int(f.MaxVersion)))
	}
	for _, f := range resp.FinalizedFeatures {
		fin = append(fin, f.Name+"="+strconv.Itoa(int(f.MinVersionLevel))+"-"+strconv.Itoa(int(f.MaxVersionLevel)))
	}
	return "supported [" + strings.Join(sup, " ") + "] finalized [" + strings.Join(fin, " ") + "] epoch " + strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10)
}

// kafka-features upgrade/downgrade (UpdateFeatures): asking for the level
// a feature is at succeeds and changes nothing; another level, or a
// feature the gateway does not serve, is refused with Kafka's
// INVALID_UPDATE_VERSION text, and describe still shows group.version at 1.
func TestJavaKafkaFeaturesUpdate(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	const tool = "org.apache.kafka.tools.FeatureCommand"
	out, _ := kafkaTool(t, gw.Addr, tool, "upgrade", "--feature", "group.version=1")
	if !strings.Contains(out, "group.version was upgraded to 1") {
		t.Fatalf("upgrade to the level in force printed:\n%s", out)
	}
	for _, args := range [][]string{
		{"upgrade", "--feature", "transaction.version=2"},
		{"downgrade", "--feature", "group.version=0"},
	} {
		out, errOut, err := javaRun(t, 90*time.Second, "", tool, append([]string{"--bootstrap-server", gw.Addr}, args...)...)
		all := out + errOut
		if err == nil || !strings.Contains(all, "Invalid update version") {
			t.Fatalf("%v: err %v, printed:\n%s", args, err, tail(all, 20))
		}
	}
	out, _ = kafkaTool(t, gw.Addr, tool, "describe")
	if !featureLine.MatchString(out) {
		t.Fatalf("describe after the refusals:\n%s", out)
	}
}
