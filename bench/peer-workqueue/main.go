// Command peer-workqueue runs bench/queue_bench.cpp's workloads on client-go: the workqueue every
// Go controller uses (a TypedRateLimitingInterface, as controller-runtime builds it) and the
// thread-safe indexer a Go operator would use for "namespace/deploymentName -> scalers". It prints
// the same rows as queue_bench, one per line: id<TAB>label<TAB>value.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const (
	queueItems     = 2_000_000 // items through add+get+done per queue workload
	batch          = 100       // keys added before taking as many (a queue with some depth)
	scalers        = 100_000
	namespaces     = 1000
	lookups        = 2_000_000
	concurrentRead = 1_000_000 // lookups per reader in the concurrent workload
)

func newQueue() workqueue.TypedRateLimitingInterface[string] {
	// What controller-runtime creates for a controller, without a metrics name (no-op metrics, as
	// queue_bench's queue has none either).
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{})
}

// threadKeys returns n distinct keys for one thread. Every item of a run has its own key: a key
// re-added while a preempted worker still holds it would be deduplicated, and the threads would
// then wait for items that never come.
func threadKeys(thread, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-ns-%d/scaler-%07d", thread, i)
	}
	return keys
}

// queueWorkload runs `threads` goroutines, each adding batches of its own keys and taking as many
// items (any thread's), queueItems in total; then it shuts the queue down. Returns items processed
// per second.
func queueWorkload(threads int) float64 {
	q := newQueue()
	perThread := queueItems / threads
	var finished sync.WaitGroup
	var processed atomic.Int64
	keys := make([][]string, threads)
	for t := range keys {
		keys[t] = threadKeys(t, perThread)
	}
	start := time.Now()
	for t := 0; t < threads; t++ {
		finished.Add(1)
		go func(own []string) {
			defer finished.Done()
			local := int64(0)
			for n := 0; n < len(own); n += batch {
				end := min(n+batch, len(own))
				for _, key := range own[n:end] {
					q.Add(key)
				}
				for range end - n {
					item, shutdown := q.Get()
					if shutdown {
						panic("shut down early")
					}
					q.Done(item)
					local++
				}
			}
			processed.Add(local)
		}(keys[t])
	}
	finished.Wait()
	elapsed := time.Since(start)
	q.ShutDown()
	if processed.Load() != int64(threads*perThread) {
		panic("lost items")
	}
	return float64(processed.Load()) / elapsed.Seconds()
}

type scaler struct {
	namespace, name, deployment string
}

func scalerKey(obj interface{}) (string, error) {
	s := obj.(*scaler)
	return s.namespace + "/" + s.name, nil
}

func byDeployment(obj interface{}) ([]string, error) {
	s := obj.(*scaler)
	return []string{s.namespace + "/" + s.deployment}, nil
}

func nsName(i int) string  { return "namespace-" + strconv.Itoa(i%namespaces) }
func depName(i int) string { return "deployment-" + strconv.Itoa(i) }

func newIndex() cache.Indexer {
	index := cache.NewIndexer(scalerKey, cache.Indexers{"deployment": byDeployment})
	for i := 0; i < scalers; i++ {
		if err := index.Add(&scaler{nsName(i), "scaler-" + strconv.Itoa(i), depName(i)}); err != nil {
			panic(err)
		}
	}
	return index
}

// probes returns 65536 (namespace, deployment) pairs in a scattered order: targeted Deployments
// when hit, else names in the same namespaces that no scaler targets.
func probes(hit bool) (ns, dep []string) {
	ns, dep = make([]string, 1<<16), make([]string, 1<<16)
	x := uint64(88172645463325252)
	for i := range ns {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		j := int(x % scalers)
		ns[i] = nsName(j)
		if hit {
			dep[i] = depName(j)
		} else {
			dep[i] = "unmanaged-" + strconv.Itoa(j)
		}
	}
	return ns, dep
}

// lookupNs returns the mean ns per lookup; the webhook has namespace and name apart, so building
// the index key is part of the lookup.
func lookupNs(index cache.Indexer, hit bool, n int) float64 {
	ns, dep := probes(hit)
	found := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		objs, err := index.ByIndex("deployment", ns[i&0xffff]+"/"+dep[i&0xffff])
		if err != nil {
			panic(err)
		}
		found += len(objs)
	}
	elapsed := time.Since(start)
	if hit != (found == n) {
		panic("unexpected lookup results")
	}
	return float64(elapsed.Nanoseconds()) / float64(n)
}

// concurrentLookupNs: two readers look up while a writer moves scalers between Deployments (an
// informer applying updates); mean ns per lookup per reader.
func concurrentLookupNs(index cache.Indexer) float64 {
	var stop atomic.Bool
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; !stop.Load(); i++ {
			j := i % scalers
			target := depName(j)
			if i/scalers%2 == 0 {
				target = "moved-" + strconv.Itoa(j)
			}
			if err := index.Update(&scaler{nsName(j), "scaler-" + strconv.Itoa(j), target}); err != nil {
				panic(err)
			}
		}
	}()
	var readers sync.WaitGroup
	results := make([]float64, 2)
	for r := range results {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			results[r] = lookupNsAny(index, concurrentRead)
		}(r)
	}
	readers.Wait()
	stop.Store(true)
	writer.Wait()
	return (results[0] + results[1]) / 2
}

// lookupNsAny is lookupNs without the hit check (the writer moves scalers away and back).
func lookupNsAny(index cache.Indexer, n int) float64 {
	ns, dep := probes(true)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := index.ByIndex("deployment", ns[i&0xffff]+"/"+dep[i&0xffff]); err != nil {
			panic(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func row(id, label string, value float64) {
	fmt.Fprintf(os.Stdout, "%s\t%s\t%.0f\n", id, label, value)
}

func main() {
	queueWorkload(1) // warm up the allocator and the scheduler
	row("queue_1t", "queue add+get+done, 1 thread (ops/s)", queueWorkload(1))
	row("queue_4t", "queue add+get+done, 4 threads (ops/s)", queueWorkload(4))
	index := newIndex()
	lookupNs(index, true, lookups/10)
	row("index_hit", "index lookup, 100k scalers, hit (ns/op)", lookupNs(index, true, lookups))
	row("index_miss", "index lookup, 100k scalers, miss (ns/op)", lookupNs(index, false, lookups))
	row("index_rw", "index lookup, 100k scalers, 2 readers + 1 writer (ns/op)",
		concurrentLookupNs(index))
}
