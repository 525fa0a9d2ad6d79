// Command etcd runs a single-member etcd server on loopback for the local test
// cluster. It embeds go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes
// requires, so the apiserver talks to the etcd it was released against.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory for the etcd data (required)")
	clientURL := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client URL to listen on")
	peerURL := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer URL to listen on")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("etcd: --data-dir is required")
	}

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cu, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("etcd: bad --listen-client-urls: %v", err)
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("etcd: bad --listen-peer-urls: %v", err)
	}
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	// Tests churn objects quickly; keep the backend small and unsynced to disk.
	cfg.UnsafeNoFsync = true
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1m"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: start: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd ready on %s\n", cu)
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd: not ready within 60s")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
	e.Close()
}
