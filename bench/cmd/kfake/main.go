// Command kfake runs franz-go's in-memory fake Kafka broker (pkg/kfake) as
// a process of its own, so that `benchcompare` can measure it the way it
// measures `sluice serve`: over TCP, with its CPU time read from /proc.
//
//	kfake -port 19092
//
// It prints its listen address once it is ready and runs until SIGINT or
// SIGTERM. kfake always listens on 127.0.0.1.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port to listen on, on 127.0.0.1 (0: any free port)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}
	if *port != 0 {
		opts = append(opts, kfake.Ports(*port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	for _, addr := range c.ListenAddrs() {
		fmt.Println(addr)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs
	c.Close()
}
