// vsbench: the client side of bench/sections/edits.sh, scale.sh and recommender_memory.sh. It talks to
// the local control plane with client-go and measures operators from the outside, the same way
// for vscaler and for its controller-runtime peer.
//
//	vsbench populate  create namespaces, Deployments and VerticalScalers fast (parallel creates)
//	vsbench latency   N user edits of a Deployment's cpu request; time until the declared value
//	                  is stored again, seen on a watch opened before the edits
//	vsbench reset     Helm-like resets of only the resources; Deployment generation increments
//	vsbench settle    wait until an operator's /metrics shows its queue drained and quiet
//	vsbench resync    wait for the next burst of reconciles (the peer's cache resync) and time it
//	vsbench apicount  the API server's request counters (reads and writes) for the bench resources
//	vsbench resynclog wait in vscaler's debug log for a "resync pass" that started after a time
//	vsbench populate-histories  scalers with filled checkpoints (recommender.go)
//
// Results go to stdout as "key<TAB>value" lines; progress to stderr.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var scalerResource = schema.GroupVersionResource{Group: "scaling.vscaler.dev", Version: "v1beta1", Resource: "verticalscalers"}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "vsbench: "+format+"\n", args...)
	os.Exit(1)
}

func restConfig(kubeconfig string) *rest.Config {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fatal("kubeconfig: %v", err)
	}
	config.QPS, config.Burst = -1, 0 // no client-side rate limit
	config.Timeout = 60 * time.Second
	return config
}

func clientset(kubeconfig string, protobuf bool) *kubernetes.Clientset {
	config := restConfig(kubeconfig)
	if protobuf {
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		fatal("client: %v", err)
	}
	return c
}

func main() {
	if len(os.Args) < 2 {
		fatal("usage: vsbench populate|latency|reset|settle|resync|apicount [flags]")
	}
	command, args := os.Args[1], os.Args[2:]
	switch command {
	case "populate":
		populate(args)
	case "latency":
		latency(args)
	case "reset":
		reset(args)
	case "settle":
		settle(args)
	case "resync":
		resyncBurst(args)
	case "apicount":
		apicount(args)
	case "resynclog":
		resyncLog(args)
	case "populate-histories":
		populateHistories(args)
	default:
		fatal("unknown command %q", command)
	}
}

// ---- populate --------------------------------------------------------------------------------

func namespaceName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

func smallDeployment(name string, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	replicas := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse(cpu),
						corev1.ResourceMemory: resource.MustParse(memory),
					}},
				}}},
			},
		},
	}
}

func scalerObject(namespace, name, deployment, mode, cpu, memory string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scaling.vscaler.dev/v1beta1",
		"kind":       "VerticalScaler",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"deploymentName": deployment,
			"updateMode":     mode,
			"containers": []any{map[string]any{
				"name":     "app",
				"requests": map[string]any{"cpu": cpu, "memory": memory},
			}},
		},
	}}
}

// parallel runs job(0..n-1) on `workers` goroutines; returns the number of failures.
func parallel(n, workers int, what string, job func(i int) error) int64 {
	var next, done, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Second):
				fmt.Fprintf(os.Stderr, "vsbench: %s: %d/%d\n", what, done.Load(), n)
			}
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					if err = job(i); err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					if failed.Add(1) <= 5 {
						fmt.Fprintf(os.Stderr, "vsbench: %s %d: %v\n", what, i, err)
					}
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	elapsed := time.Since(start)
	fmt.Fprintf(os.Stderr, "vsbench: %s: %d in %.1f s (%.0f/s), %d failed\n", what, n,
		elapsed.Seconds(), float64(n)/elapsed.Seconds(), failed.Load())
	return failed.Load()
}

// populateClients returns the typed and dynamic clients of kubeconfig and creates the namespaces
// PREFIX-000 .. PREFIX-(n-1), workers at a time; it returns how many creates failed.
func populateClients(ctx context.Context, kubeconfig, prefix string, n, workers int) (*kubernetes.Clientset, dynamic.Interface, int64) {
	kube := clientset(kubeconfig, true)
	dyn, err := dynamic.NewForConfig(restConfig(kubeconfig))
	if err != nil {
		fatal("dynamic client: %v", err)
	}
	failed := parallel(n, workers, "namespaces", func(i int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: namespaceName(prefix, i)}}, metav1.CreateOptions{})
		return err
	})
	return kube, dyn, failed
}

func populate(args []string) {
	fs := flag.NewFlagSet("populate", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	prefix := fs.String("prefix", "bench", "namespace name prefix (PREFIX-000, ...)")
	namespaces := fs.Int("namespaces", 100, "namespaces")
	deployments := fs.Int("deployments", 50000, "Deployments, round robin over the namespaces (d-00000, ...)")
	scalers := fs.Int("scalers", 10000, "VerticalScalers (s-N targets d-N of its namespace); at most -deployments")
	workers := fs.Int("workers", 48, "parallel creates")
	mode := fs.String("mode", "Reconcile", "updateMode of the scalers")
	cpu := fs.String("cpu", "250m", "declared cpu request")
	memory := fs.String("memory", "128Mi", "declared memory request")
	drifted := fs.Bool("drifted", false, "create the scaled Deployments with other resources (100m/64Mi) instead of the declared ones")
	fs.Parse(args)
	if *scalers > *deployments || *namespaces < 1 {
		fatal("populate: need 1 <= namespaces and scalers <= deployments")
	}
	ctx := context.Background()
	kube, dyn, failed := populateClients(ctx, *kubeconfig, *prefix, *namespaces, *workers)
	failed += parallel(*deployments, *workers, "deployments", func(k int) error {
		ns, index := namespaceName(*prefix, k%*namespaces), k / *namespaces
		c, m := "100m", "64Mi"
		if k < *scalers && !*drifted {
			c, m = *cpu, *memory
		}
		_, err := kube.AppsV1().Deployments(ns).Create(ctx,
			smallDeployment(fmt.Sprintf("d-%05d", index), c, m), metav1.CreateOptions{})
		return err
	})
	failed += parallel(*scalers, *workers, "scalers", func(k int) error {
		ns, index := namespaceName(*prefix, k%*namespaces), k / *namespaces
		_, err := dyn.Resource(scalerResource).Namespace(ns).Create(ctx,
			scalerObject(ns, fmt.Sprintf("s-%05d", index), fmt.Sprintf("d-%05d", index), *mode, *cpu, *memory),
			metav1.CreateOptions{})
		return err
	})
	if failed > 0 {
		fatal("populate: %d creates failed", failed)
	}
}

// ---- latency and reset -----------------------------------------------------------------------

func cpuOf(d *appsv1.Deployment, container string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == container {
			if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
				return q.String()
			}
		}
	}
	return ""
}

func rvOf(d *appsv1.Deployment) uint64 {
	v, _ := strconv.ParseUint(d.ResourceVersion, 10, 64)
	return v
}

// deploymentWatch follows one Deployment from a resourceVersion, reopening the watch when the
// server ends it, and remembers the newest stored state seen.
type deploymentWatch struct {
	kube      *kubernetes.Clientset
	namespace string
	name      string
	watcher   watch.Interface
	lastRV    string
}

func newDeploymentWatch(kube *kubernetes.Clientset, namespace, name, rv string) *deploymentWatch {
	w := &deploymentWatch{kube: kube, namespace: namespace, name: name, lastRV: rv}
	w.open()
	return w
}

func (w *deploymentWatch) open() {
	var err error
	w.watcher, err = w.kube.AppsV1().Deployments(w.namespace).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + w.name, ResourceVersion: w.lastRV, AllowWatchBookmarks: true})
	if err != nil {
		fatal("watch %s/%s: %v", w.namespace, w.name, err)
	}
}

// until waits for a stored state satisfying ok; false on timeout.
func (w *deploymentWatch) until(deadline time.Time, ok func(*appsv1.Deployment) bool) (*appsv1.Deployment, bool) {
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, false
		}
		select {
		case event, open := <-w.watcher.ResultChan():
			if !open {
				w.open()
				continue
			}
			d, isDeployment := event.Object.(*appsv1.Deployment)
			if !isDeployment {
				if event.Type == watch.Error {
					fatal("watch error: %v", event.Object)
				}
				continue
			}
			w.lastRV = d.ResourceVersion
			if event.Type != watch.Bookmark && ok(d) {
				return d, true
			}
		case <-time.After(remaining):
			return nil, false
		}
	}
}

// quiet waits until no event arrives for `gap` (or until deadline).
func (w *deploymentWatch) quiet(gap time.Duration, deadline time.Time) {
	for time.Now().Before(deadline) {
		select {
		case event, open := <-w.watcher.ResultChan():
			if !open {
				w.open()
				continue
			}
			if d, ok := event.Object.(*appsv1.Deployment); ok {
				w.lastRV = d.ResourceVersion
			}
		case <-time.After(gap):
			return
		}
	}
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func cpuPatch(container, cpu, memory string) []byte {
	requests := map[string]string{"cpu": cpu}
	if memory != "" {
		requests["memory"] = memory
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": container, "resources": map[string]any{"requests": requests}}}}}}})
	return body
}

func latency(args []string) {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	namespace := fs.String("namespace", "", "namespace")
	name := fs.String("deployment", "", "Deployment")
	container := fs.String("container", "app", "container")
	declared := fs.String("declared-cpu", "250m", "the cpu request the scaler declares")
	count := fs.Int("count", 200, "measured edits")
	warmup := fs.Int("warmup", 5, "edits before measuring (connections, caches)")
	pause := fs.Duration("pause", 50*time.Millisecond, "pause after each restore")
	timeout := fs.Duration("timeout", 30*time.Second, "per edit")
	samplesFile := fs.String("samples", "", "also write each measured edit's latency (ms), one per line, in edit order")
	fs.Parse(args)
	kube := clientset(*kubeconfig, false)
	ctx := context.Background()
	current, err := kube.AppsV1().Deployments(*namespace).Get(ctx, *name, metav1.GetOptions{})
	if err != nil {
		fatal("get: %v", err)
	}
	w := newDeploymentWatch(kube, *namespace, *name, current.ResourceVersion)
	if cpuOf(current, *container) != *declared {
		if _, ok := w.until(time.Now().Add(2*time.Minute), func(d *appsv1.Deployment) bool {
			return cpuOf(d, *container) == *declared
		}); !ok {
			fatal("latency: %s/%s never carried cpu %s", *namespace, *name, *declared)
		}
	}
	w.quiet(500*time.Millisecond, time.Now().Add(10*time.Second))
	var samples []float64
	for i := 0; i < *warmup+*count; i++ {
		user := fmt.Sprintf("%dm", 901+i%50)
		stored, err := kube.AppsV1().Deployments(*namespace).Patch(ctx, *name, types.StrategicMergePatchType,
			cpuPatch(*container, user, ""), metav1.PatchOptions{FieldManager: "user"})
		written := time.Now()
		if err != nil {
			fatal("patch: %v", err)
		}
		if cpuOf(stored, *container) != *declared {
			after := rvOf(stored)
			if _, ok := w.until(written.Add(*timeout), func(d *appsv1.Deployment) bool {
				return rvOf(d) > after && cpuOf(d, *container) == *declared
			}); !ok {
				fatal("latency: edit %d not restored within %s", i, *timeout)
			}
		}
		if i >= *warmup {
			samples = append(samples, float64(time.Since(written).Microseconds())/1000)
		}
		time.Sleep(*pause)
	}
	if *samplesFile != "" {
		var lines strings.Builder
		for _, sample := range samples {
			fmt.Fprintf(&lines, "%.3f\n", sample)
		}
		if err := os.WriteFile(*samplesFile, []byte(lines.String()), 0o644); err != nil {
			fatal("latency: %v", err)
		}
	}
	sort.Float64s(samples)
	fmt.Printf("p50_ms\t%.2f\np99_ms\t%.2f\nmax_ms\t%.2f\nedits\t%d\n",
		percentile(samples, 0.50), percentile(samples, 0.99), samples[len(samples)-1], len(samples))
}

func reset(args []string) {
	fs := flag.NewFlagSet("reset", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	namespace := fs.String("namespace", "", "namespace")
	name := fs.String("deployment", "", "Deployment")
	container := fs.String("container", "app", "container")
	declared := fs.String("declared-cpu", "250m", "the cpu request the scaler declares")
	chartCPU := fs.String("chart-cpu", "100m", "the cpu request the chart renders")
	chartMemory := fs.String("chart-memory", "64Mi", "the memory request the chart renders")
	count := fs.Int("count", 20, "resets")
	settleGap := fs.Duration("quiet", time.Second, "no write for this long = settled")
	fs.Parse(args)
	kube := clientset(*kubeconfig, false)
	ctx := context.Background()
	get := func() *appsv1.Deployment {
		d, err := kube.AppsV1().Deployments(*namespace).Get(ctx, *name, metav1.GetOptions{})
		if err != nil {
			fatal("get: %v", err)
		}
		return d
	}
	current := get()
	w := newDeploymentWatch(kube, *namespace, *name, current.ResourceVersion)
	if cpuOf(current, *container) != *declared {
		if _, ok := w.until(time.Now().Add(2*time.Minute), func(d *appsv1.Deployment) bool {
			return cpuOf(d, *container) == *declared
		}); !ok {
			fatal("reset: %s/%s never carried cpu %s", *namespace, *name, *declared)
		}
	}
	w.quiet(*settleGap, time.Now().Add(30*time.Second))
	total := int64(0)
	// The reset: the chart's values for the container's resources, as a Helm 3 upgrade's
	// three-way strategic merge patch carries them when only the resources differ.
	body := cpuPatch(*container, *chartCPU, *chartMemory)
	for i := 0; i < *count; i++ {
		before := get()
		stored, err := kube.AppsV1().Deployments(*namespace).Patch(ctx, *name, types.StrategicMergePatchType,
			body, metav1.PatchOptions{FieldManager: "helm"})
		if err != nil {
			fatal("reset patch: %v", err)
		}
		if cpuOf(stored, *container) != *declared {
			after := rvOf(stored)
			if _, ok := w.until(time.Now().Add(30*time.Second), func(d *appsv1.Deployment) bool {
				return rvOf(d) > after && cpuOf(d, *container) == *declared
			}); !ok {
				fatal("reset %d: declared values not restored within 30 s", i)
			}
		}
		w.quiet(*settleGap, time.Now().Add(30*time.Second))
		total += get().Generation - before.Generation
	}
	fmt.Printf("generations_per_reset\t%.2f\nresets\t%d\n", float64(total)/float64(*count), *count)
}

// ---- operator metrics ------------------------------------------------------------------------

// scrape sums, per metric name, every series of the Prometheus text at url.
func scrape(url string, names ...string) (map[string]float64, error) {
	client := http.Client{Timeout: 5 * time.Second}
	response, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	sums := map[string]float64{}
	scanner := bufio.NewScanner(response.Body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		series := line
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			series = line[:i]
		}
		name := series
		if i := strings.IndexAny(series, "{ "); i > 0 {
			name = series[:i]
		}
		for _, wanted := range names {
			if name == wanted {
				fields := strings.Fields(line)
				v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
				sums[name] += v
			}
		}
	}
	return sums, scanner.Err()
}

const (
	reconcileTotal = "controller_runtime_reconcile_total"
	queueDepth     = "workqueue_depth"
	queueAdds      = "workqueue_adds_total"
)

func settle(args []string) {
	fs := flag.NewFlagSet("settle", flag.ExitOnError)
	url := fs.String("metrics", "", "the operator's /metrics URL")
	minimum := fs.Float64("min-reconciles", 0, "reconciles to see before settling")
	gap := fs.Duration("quiet", 3*time.Second, "no reconcile for this long, queue empty = settled")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up after")
	fs.Parse(args)
	start := time.Now()
	last, lastChange := -1.0, time.Now()
	for time.Since(start) < *timeout {
		m, err := scrape(*url, reconcileTotal, queueDepth)
		if err == nil {
			total := m[reconcileTotal]
			if total != last {
				last, lastChange = total, time.Now()
			}
			if total >= *minimum && m[queueDepth] == 0 && time.Since(lastChange) >= *gap {
				fmt.Printf("settled_s\t%.1f\nreconciles\t%.0f\n", lastChange.Sub(start).Seconds(), total)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	fatal("settle: not settled within %s (reconciles %.0f)", *timeout, last)
}

// resyncBurst: waits for queue adds to start rising (the resync's events), then for the queue to
// drain and reconciles to stop; prints the burst's wall time, from the first add seen to the last
// reconcile seen (100 ms polling).
func resyncBurst(args []string) {
	fs := flag.NewFlagSet("resync", flag.ExitOnError)
	url := fs.String("metrics", "", "the operator's /metrics URL")
	gap := fs.Duration("quiet", 3*time.Second, "no reconcile for this long, queue empty = over")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after")
	fs.Parse(args)
	deadline := time.Now().Add(*timeout)
	base, err := scrape(*url, reconcileTotal, queueAdds)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		base, err = scrape(*url, reconcileTotal, queueAdds)
	}
	var started time.Time
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		m, err := scrape(*url, queueAdds)
		if err == nil && m[queueAdds] > base[queueAdds] {
			started = time.Now()
			break
		}
	}
	if started.IsZero() {
		fatal("resync: no burst within %s", *timeout)
	}
	last, lastChange := base[reconcileTotal], started
	for time.Now().Before(deadline) {
		m, err := scrape(*url, reconcileTotal, queueDepth)
		if err == nil {
			if m[reconcileTotal] != last {
				last, lastChange = m[reconcileTotal], time.Now()
			}
			if m[queueDepth] == 0 && time.Since(lastChange) >= *gap {
				fmt.Printf("wall_ms\t%.0f\nreconciles\t%.0f\n", float64(lastChange.Sub(started).Milliseconds()),
					last-base[reconcileTotal])
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fatal("resync: the burst did not end within %s", *timeout)
}

// resyncLog follows vscaler's JSON log until a "resync pass" line appears whose pass started
// (ts - wall_ms) at or after --after (Unix milliseconds); prints its fields.
func resyncLog(args []string) {
	fs := flag.NewFlagSet("resynclog", flag.ExitOnError)
	path := fs.String("log", "", "vscaler's log file (--log-level debug)")
	after := fs.Int64("after", 0, "Unix time in milliseconds")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	fs.Parse(args)
	deadline := time.Now().Add(*timeout)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(*path)
		if err != nil {
			fatal("resynclog: %v", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, `"resync pass"`) {
				continue
			}
			var fields map[string]string
			if json.Unmarshal([]byte(line), &fields) != nil {
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, fields["ts"])
			wall, _ := strconv.ParseInt(fields["wall_ms"], 10, 64)
			if err != nil || ts.UnixMilli()-wall < *after {
				continue
			}
			for _, key := range []string{"scalers", "api_calls", "enqueued", "wall_ms"} {
				fmt.Printf("%s\t%s\n", key, fields[key])
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	fatal("resynclog: no resync pass started after %d within %s", *after, *timeout)
}

// ---- API server counters ---------------------------------------------------------------------

// apicount prints the API server's apiserver_request_total summed into reads (GET, LIST) of
// Deployments and VerticalScalers and writes (every mutating verb) of Deployments,
// VerticalScalers (and their status) and Events.
func apicount(args []string) {
	fs := flag.NewFlagSet("apicount", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	fs.Parse(args)
	kube := clientset(*kubeconfig, false)
	stream, err := kube.RESTClient().Get().AbsPath("/metrics").Stream(context.Background())
	if err != nil {
		fatal("apicount: %v", err)
	}
	defer stream.Close()
	counts := map[string]float64{}
	scanner := bufio.NewScanner(stream)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		body := line[strings.IndexByte(line, '{')+1 : strings.LastIndexByte(line, '}')]
		for _, pair := range strings.Split(body, ",") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		fields := strings.Fields(line)
		value, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
		resource, verb := labels["resource"], labels["verb"]
		switch verb {
		case "GET", "LIST":
			if resource == "deployments" || resource == "verticalscalers" {
				counts["reads"] += value
				counts["reads_"+resource] += value
			}
		case "WATCH", "CONNECT":
		default:
			if resource == "deployments" || resource == "verticalscalers" || resource == "events" {
				counts["writes"] += value
				counts["writes_"+resource] += value
			}
		}
	}
	if err := scanner.Err(); err != nil && err != io.EOF {
		fatal("apicount: %v", err)
	}
	for _, key := range []string{"reads", "reads_deployments", "reads_verticalscalers", "writes",
		"writes_deployments", "writes_verticalscalers", "writes_events"} {
		fmt.Printf("%s\t%.0f\n", key, counts[key])
	}
}
