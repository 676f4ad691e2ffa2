package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// kcatMember is a `kcat -G` consumer printing "<partition> <offset>" lines.
type kcatMember struct {
	cmd *exec.Cmd
	out *syncbuf.Buffer
	err *syncbuf.Buffer
}

func startKcatMember(t *testing.T, kcat, addr, group, topic string) *kcatMember {
	t.Helper()
	m := &kcatMember{out: &syncbuf.Buffer{}, err: &syncbuf.Buffer{}}
	m.cmd = exec.Command(kcat, "-b", addr, "-G", group, "-q", "-u", "-f", "%p %o\n",
		"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000",
		"-X", "heartbeat.interval.ms=500", "-X", "topic.metadata.refresh.interval.ms=2000", topic)
	m.cmd.Env = childEnv()
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.err
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("kcat stderr:\n%s", tail(m.err.String(), 50))
		}
	})
	return m
}

// stop ends kcat as Ctrl-C does: it leaves the group.
func (m *kcatMember) stop() {
	if m.cmd.ProcessState != nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}

// partitionsSince returns the partitions of the lines printed after the
// first skip lines, and the number of lines.
func (m *kcatMember) partitionsSince(skip int) (map[int32]bool, int) {
	lines := strings.Split(strings.TrimSuffix(m.out.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	ps := map[int32]bool{}
	for i := skip; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) != 2 {
			continue
		}
		p, _ := strconv.Atoi(f[0])
		ps[int32(p)] = true
	}
	return ps, len(lines)
}

func TestGroupsKcatSplit(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	const topic, group, parts = "g-kcat", "grp-kcat", 4
	clientWithTopic(t, gw.Addr, topic, parts)
	produceParts(t, gw.Addr, topic, parts, 5)

	a := startKcatMember(t, kcat, gw.Addr, group, topic)
	b := startKcatMember(t, kcat, gw.Addr, group, topic)
	split := func(skipA, skipB int) error {
		pa, _ := a.partitionsSince(skipA)
		pb, _ := b.partitionsSince(skipB)
		if len(pa) == 0 || len(pb) == 0 || len(pa)+len(pb) != parts {
			return fmt.Errorf("a read %v, b read %v", pa, pb)
		}
		for p := range pa {
			if pb[p] {
				return fmt.Errorf("both read partition %d: a %v b %v", p, pa, pb)
			}
		}
		return nil
	}
	await.Until(t, 60*time.Second, func() error { return split(0, 0) })

	// b stops: a takes every partition.
	b.stop()
	_, skipA := a.partitionsSince(0)
	produceParts(t, gw.Addr, topic, parts, 3)
	await.Until(t, 60*time.Second, func() error {
		pa, _ := a.partitionsSince(skipA)
		if len(pa) != parts {
			return fmt.Errorf("a alone read %v", pa)
		}
		return nil
	})

	// b comes back: they split again.
	b = startKcatMember(t, kcat, gw.Addr, group, topic)
	if err := await.Poll(60*time.Second, 500*time.Millisecond, func() error {
		// Wait until the group is Stable with two members before the
		// next round of records.
		d, err := gw.describeMembers(group)
		if err != nil || d != 2 {
			return fmt.Errorf("members %d, %v", d, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 60*time.Second, err)
	}
	_, skipA = a.partitionsSince(0)
	_, skipB := b.partitionsSince(0)
	produceParts(t, gw.Addr, topic, parts, 3)
	await.Until(t, 60*time.Second, func() error { return split(skipA, skipB) })
}

// describeMembers counts the members of a Stable group, straight from the
// coordinator (0 when not Stable).
func (gw *gateway) describeMembers(group string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].State != "Stable" {
		return 0, nil
	}
	return len(resp.Groups[0].Members), nil
}
