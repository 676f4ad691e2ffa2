package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// throttleHook records the throttle times franz-go is told of.
type throttleHook struct {
	mu  sync.Mutex
	max time.Duration
	n   int
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.max = max(h.max, d)
}

func (h *throttleHook) seen() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.max
}

// Client quotas end to end, on the backend under test: kafka-configs sets
// producer and consumer byte rates for a client id and a user default and
// describes them; a franz-go producer and consumer of that client id are
// told to wait (throttle_time_ms, franz-go's OnBrokerThrottle) and the Java
// producer reports it (produce-throttle-time-max); a client over its
// request_percentage is throttled on any key; the gateway counts it all;
// after a restart the quota is still described and still acts.
func TestClientQuotasKafkaConfigsThrottleRestart(t *testing.T) {
	t.Parallel()
	needJava(t)
	dir := t.TempDir()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	gw := spawnGateway(t, dir, "--metrics-addr="+metricsAddr)
	const configs = configsClass
	kafkaTool(t, gw.Addr, configs, "--alter", "--entity-type", "clients", "--entity-name", "quota-app",
		"--add-config", "producer_byte_rate=8192,consumer_byte_rate=8192")
	kafkaTool(t, gw.Addr, configs, "--alter", "--entity-type", "clients", "--entity-name", "quota-java",
		"--add-config", "producer_byte_rate=8192")
	kafkaTool(t, gw.Addr, configs, "--alter", "--entity-type", "users", "--entity-default",
		"--add-config", "controller_mutation_rate=10")
	// A request share so small that any request exceeds it.
	kafkaTool(t, gw.Addr, configs, "--alter", "--entity-type", "clients", "--entity-name", "quota-req",
		"--add-config", "request_percentage=0.0001")
	describe := func(addr string) string {
		out, _ := kafkaTool(t, addr, configs, "--describe", "--entity-type", "clients", "--entity-name", "quota-app")
		users, _ := kafkaTool(t, addr, configs, "--describe", "--entity-type", "users", "--entity-default")
		return out + users
	}
	out := describe(gw.Addr)
	for _, want := range []string{"client-id 'quota-app'", "consumer_byte_rate=8192.0", "producer_byte_rate=8192.0",
		"default user-principal", "controller_mutation_rate=10.0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kafka-configs --describe lacks %q:\n%s", want, out)
		}
	}
	// A key the entity does not take is refused, naming it.
	bout, berr, err := javaRun(t, 90*time.Second, "", configs, "--bootstrap-server", gw.Addr,
		"--alter", "--entity-type", "clients", "--entity-name", "quota-app", "--add-config", "connection_creation_rate=5")
	if err == nil || !strings.Contains(bout+berr, "connection_creation_rate") {
		t.Errorf("kafka-configs --alter with an ip key on a client: %v\n%s\n%s", err, bout, tail(berr, 20))
	}

	cl := clientWithTopic(t, gw.Addr, "quota-t", 1)
	cl.Close()
	// ~120 KB against 8 KB/s: the first window's 10 s allow 80 KB.
	value := bytes.Repeat([]byte("q"), 4000)
	produceThrottled := func(addr string) {
		t.Helper()
		var h throttleHook
		p := newClient(t, addr, kgo.ClientID("quota-app"), kgo.WithHooks(&h), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression())) // the bytes on the wire are what counts
		defer p.Close()
		recs := make([]*kgo.Record, 30)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "quota-t", Value: value}
		}
		produceAll(t, p, recs)
		n, d := h.seen()
		if n == 0 || d <= 0 {
			t.Fatalf("producer over its quota was not throttled (%d throttles, max %v)", n, d)
		}
		t.Logf("franz-go producer: %d throttles, longest %v", n, d)
	}
	produceThrottled(gw.Addr)

	// The consumer of the same client id reads those 120 KB at 8 KB/s.
	var ch throttleHook
	consumeN(t, gw.Addr, "quota-t", 30, within(60*time.Second),
		consumeWith(kgo.ClientID("quota-app"), kgo.WithHooks(&ch), kgo.FetchMaxBytes(1<<20)))
	if n, d := ch.seen(); n == 0 || d <= 0 {
		t.Fatalf("consumer over its quota was not throttled (%d throttles, max %v)", n, d)
	} else {
		t.Logf("franz-go consumer: %d throttles, longest %v", n, d)
	}

	// request_percentage throttles any key, here Metadata.
	var rh throttleHook
	rc := newClient(t, gw.Addr, kgo.ClientID("quota-req"), kgo.WithHooks(&rh))
	await.Until(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, rc); err != nil {
			return err
		}
		if n, _ := rh.seen(); n == 0 {
			return errors.New("no throttle on Metadata over request_percentage")
		}
		return nil
	})
	rc.Close()

	// The Java producer reports the throttle in its own metric.
	pout, perr, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.ProducerPerformance",
		"--topic", "quota-t", "--num-records", "30", "--record-size", "4000", "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+gw.Addr, "client.id=quota-java", "linger.ms=0", "--print-metrics")
	if err != nil {
		t.Fatalf("ProducerPerformance: %v\n%s", err, tail(perr, 40))
	}
	m := regexp.MustCompile(`produce-throttle-time-max:\{client-id=quota-java\}\s*:\s*([0-9.]+)`).FindStringSubmatch(pout)
	if m == nil {
		t.Fatalf("no produce-throttle-time-max in:\n%s", tail(pout, 60))
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
		t.Fatalf("Java producer saw no throttle: produce-throttle-time-max %s", m[1])
	}
	t.Logf("Java producer: produce-throttle-time-max %s ms", m[1])

	// The gateway counts what it throttled.
	counted := regexp.MustCompile(`(?m)^iggy_kafka_quota_(produce|fetch|request)_throttled_total (\d+)`)
	await.Until(t, 10*time.Second, func() error {
		body, err := httpGet("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		got := map[string]int{}
		for _, m := range counted.FindAllStringSubmatch(body, -1) {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
		if got["produce"] < 2 || got["fetch"] < 1 || got["request"] < 1 {
			return fmt.Errorf("throttled counts %v", got)
		}
		return nil
	})

	gw.Stop()
	gw2 := spawnGateway(t, dir)
	if out := describe(gw2.Addr); !strings.Contains(out, "producer_byte_rate=8192.0") || !strings.Contains(out, "controller_mutation_rate=10.0") {
		t.Fatalf("after a restart kafka-configs --describe:\n%s", out)
	}
	produceThrottled(gw2.Addr)
	gw2.Stop()
}
