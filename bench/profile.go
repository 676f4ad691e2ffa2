package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileFetch is a CPU profile being taken from a pprof endpoint.
type profileFetch struct {
	path string
	done chan error
}

// ProfileSeconds is how long startProfile's CPU profile runs; the run it
// covers should last at least that long.
var ProfileSeconds = 5

// startProfile asks pprofAddr (host:port of a --pprof-addr listener, on
// 127.0.0.1) for a CPU profile of ProfileSeconds and saves it as
// dir/<name>.cpu.pprof when it arrives.
func startProfile(pprofAddr, dir, name string) *profileFetch {
	p := &profileFetch{path: filepath.Join(dir, name+".cpu.pprof"), done: make(chan error, 1)}
	go func() {
		cl := &http.Client{Timeout: time.Duration(ProfileSeconds+30) * time.Second}
		resp, err := cl.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, ProfileSeconds))
		if err != nil {
			p.done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			p.done <- fmt.Errorf("pprof: %s", resp.Status)
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			p.done <- err
			return
		}
		f, err := os.Create(p.path)
		if err != nil {
			p.done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		p.done <- err
	}()
	return p
}

func (p *profileFetch) finish(log io.Writer) {
	if err := <-p.done; err != nil {
		fmt.Fprintf(log, "profile %s: %v\n", p.path, err)
		return
	}
	fmt.Fprintf(log, "profile written: %s\n", p.path)
}
