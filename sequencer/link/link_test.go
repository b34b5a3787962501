package link

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/node"
)

// startSequencer runs a node on store and serves it on a loopback port.
func startSequencer(t *testing.T, store objectio.Store) (*node.Node, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(context.Background(), store, node.Config{Name: "test", Addr: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return n, Serve(n, ln, ServerConfig{})
}

// follower records what a Client delivers.
type follower struct {
	mu      sync.Mutex
	state   *sequencer.State
	updates []uint64
}

func (f *follower) onState(st *sequencer.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = st
}

func (f *follower) onUpdate(u sequencer.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, u.Index)
	if err := f.state.Apply(u.Index, u.Entry); err != nil {
		panic(err)
	}
}

func (f *follower) index() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Index
}

func submitWait(t *testing.T, c *Client, body any) any {
	t.Helper()
	got := make(chan any, 1)
	c.Submit(body, func(r any) { got <- r })
	select {
	case r := <-got:
		return r
	case <-time.After(20 * time.Second):
		t.Fatalf("no reply to %T", body)
		return nil
	}
}

// TestClientFollowsAndFailsOverToTheNewestEpoch: a client follows the
// configured sequencer, gets replies and the updates they rest on; when that
// sequencer stops and another takes over, the client finds it through the
// log and carries on.
func TestClientFollowsAndFailsOverToTheNewestEpoch(t *testing.T) {
	store := objectio.NewMem()
	n1, s1 := startSequencer(t, store)
	var f follower
	c := NewClient(ClientConfig{Seed: s1.Addr(), Store: store, Lease: 300 * time.Millisecond})
	defer c.Close()
	c.Follow(f.onState, f.onUpdate)
	if f.index() == 0 {
		t.Fatal("no state delivered")
	}
	r := submitWait(t, c, &sequencer.CreateTopicRequest{Name: "t", Partitions: 2}).(*sequencer.TopicReply)
	if r.Err != 0 {
		t.Fatalf("create topic: %d", r.Err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.index() < n1.Durable() {
		if time.Now().After(deadline) {
			t.Fatalf("replica at %d, sequencer durable at %d", f.index(), n1.Durable())
		}
		time.Sleep(5 * time.Millisecond)
	}

	s1.Close()
	n1.Close()
	n2, s2 := startSequencer(t, store) // appends a newer epoch entry
	defer n2.Close()
	defer s2.Close()
	r = submitWait(t, c, &sequencer.CreateTopicRequest{Name: "u", Partitions: 1}).(*sequencer.TopicReply)
	if r.Err != 0 {
		// The first try may meet the broken connection; a client retries.
		r = submitWait(t, c, &sequencer.CreateTopicRequest{Name: "u", Partitions: 1}).(*sequencer.TopicReply)
	}
	if r.Err != 0 {
		t.Fatalf("create topic after failover: %d", r.Err)
	}
	for f.index() < n2.Durable() {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("replica at %d, new sequencer durable at %d", f.index(), n2.Durable())
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state.Topics["t"] == nil || f.state.Topics["u"] == nil {
		t.Fatalf("replica lacks a topic: %v", f.state.TopicNames())
	}
}

// TestHeldRequestsFailAfterHoldMax: with no sequencer to be found, a
// request is held, then failed with a retriable error; a commit with
// REQUEST_TIMED_OUT.
func TestHeldRequestsFailAfterHoldMax(t *testing.T) {
	c := NewClient(ClientConfig{Seed: "127.0.0.1:1", Store: objectio.NewMem(), HoldMax: 200 * time.Millisecond})
	go c.Follow(func(*sequencer.State) {}, func(sequencer.Update) {})
	defer c.Close()
	start := time.Now()
	r := submitWait(t, c, &sequencer.CommitRequest{Object: "o", Batches: make([]sequencer.BatchCommit, 2)}).(*sequencer.CommitReply)
	if len(r.Results) != 2 || r.Results[0].Err != kerr.RequestTimedOut.Code {
		t.Fatalf("reply %+v, want REQUEST_TIMED_OUT for both batches", r)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("failed after %v, before HoldMax", waited)
	}
}

// TestServerClosesAConnectionThatSendsGarbage and goes on serving others.
func TestServerClosesAConnectionThatSendsGarbage(t *testing.T) {
	store := objectio.NewMem()
	n, s := startSequencer(t, store)
	defer n.Close()
	defer s.Close()
	bad, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bad.Write([]byte{0, 0, 0, 5, 99, 1, 2, 3, 4}) // an unknown frame kind
	bad.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server answered garbage instead of closing")
	}
	// A well-formed frame whose body the sequencer does not take (a reply
	// sent as a request) is bad input too.
	odd, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Close()
	frame, _ := AppendFrame(nil, Frame{Kind: KindRequest, ID: 1, Body: &sequencer.CommitReply{}})
	odd.Write(frame)
	odd.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := odd.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server answered a reply sent as a request")
	}
	var f follower
	c := NewClient(ClientConfig{Seed: s.Addr(), Store: store})
	defer c.Close()
	c.Follow(f.onState, f.onUpdate)
	if r := submitWait(t, c, &sequencer.InitProducerRequest{ProducerID: -1}).(*sequencer.InitProducerReply); r.Err != 0 {
		t.Fatalf("init producer: %d", r.Err)
	}
}
