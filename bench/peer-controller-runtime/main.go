// peer-controller-runtime: the usual controller-runtime answer to vscaler's job, written to be
// compared with it fairly (bench/sections/edits.sh, bench/sections/scale.sh).
//
// A VerticalScaler reconciler with a field index on spec.deploymentName and a watch on
// Deployments mapped through that index (handler.EnqueueRequestsFromMapFunc). The reconciler
// reads the scaler and its Deployment, sets the declared requests/limits with a strategic merge
// patch (field manager vscaler-peer) when they differ by value, and writes the status
// (DeploymentFound, Scaled, Ready) when it changed. No admission webhook: that is the design
// difference vscaler is measured against.
//
// Two variants:
//   - default: the Deployment watch caches full Deployments (the seed's design), and the
//     reconciler reads the Deployment from that cache;
//   - --metadata-only: the watch caches only PartialObjectMetadata (builder.OnlyMetadata), and the
//     reconciler GETs the Deployment from the API server (mgr.GetAPIReader()), as the
//     controller-runtime documentation advises (a typed read through the cached client would
//     start a second, full cache).
//
// Like vscaler, scaler events pass only when metadata.generation changed (the peer's own status
// writes do not re-trigger it); Deployment events all pass, so the cache's periodic resync
// (--sync-period) re-reconciles every scaler whose Deployment is cached.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	deploymentIndex = "spec.deploymentName"
	fieldManager    = "vscaler-peer"
)

type Reconciler struct {
	client.Client
	// deployments reads full Deployments: the cache (full variant) or the API server
	// (metadata-only variant).
	deployments client.Reader
	recorder    recorder.EventRecorder
}

// scalersFor maps a Deployment to the scalers naming it, through the field index.
func (r *Reconciler) scalersFor(ctx context.Context, object client.Object) []reconcile.Request {
	var scalers VerticalScalerList
	if err := r.List(ctx, &scalers, client.InNamespace(object.GetNamespace()),
		client.MatchingFields{deploymentIndex: object.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing scalers by deployment")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(scalers.Items))
	for _, scaler := range scalers.Items {
		requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{
			Namespace: scaler.Namespace, Name: scaler.Name}})
	}
	return requests
}

// plan is what the declared resources mean for one container of the Deployment.
type plan struct {
	name     string
	declared ContainerResources
	current  corev1.ResourceRequirements
	merged   corev1.ResourceRequirements
	changed  bool
}

// setDeclared copies the declared keys into target; reports whether a value differed.
func setDeclared(target *corev1.ResourceList, declared corev1.ResourceList) bool {
	changed := false
	for key, value := range declared {
		if *target == nil {
			*target = corev1.ResourceList{}
		}
		if have, ok := (*target)[key]; !ok || have.Cmp(value) != 0 {
			(*target)[key] = value.DeepCopy()
			changed = true
		}
	}
	return changed
}

func plans(scaler *VerticalScaler, deployment *appsv1.Deployment) (out []plan, missing []string) {
	named := map[string]ContainerResources{}
	var wildcard *ContainerResources
	for i, c := range scaler.Spec.Containers {
		if c.Name == "*" {
			wildcard = &scaler.Spec.Containers[i]
		} else {
			named[c.Name] = c
		}
	}
	seen := map[string]bool{}
	for _, c := range deployment.Spec.Template.Spec.Containers {
		declared, ok := named[c.Name]
		if !ok && wildcard == nil {
			continue
		}
		if !ok {
			declared = *wildcard
		}
		seen[c.Name] = true
		p := plan{name: c.Name, declared: declared, current: c.Resources, merged: *c.Resources.DeepCopy()}
		p.changed = setDeclared(&p.merged.Requests, declared.Requests)
		p.changed = setDeclared(&p.merged.Limits, declared.Limits) || p.changed
		out = append(out, p)
	}
	for name := range named {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	return out, missing
}

// invalid says why a merged result would be rejected (requests above limits), "" when valid.
func invalid(plans []plan) string {
	for _, p := range plans {
		for key, request := range p.merged.Requests {
			if limit, ok := p.merged.Limits[key]; ok && request.Cmp(limit) > 0 {
				return fmt.Sprintf("container %s: requests.%s %s would exceed limits.%s %s",
					p.name, key, request.String(), key, limit.String())
			}
		}
	}
	return ""
}

// patchBody: a strategic merge patch setting only the declared keys of the changed containers.
func patchBody(plans []plan) ([]byte, error) {
	containers := []map[string]any{}
	for _, p := range plans {
		if !p.changed {
			continue
		}
		resources := map[string]any{}
		if len(p.declared.Requests) > 0 {
			resources["requests"] = p.declared.Requests
		}
		if len(p.declared.Limits) > 0 {
			resources["limits"] = p.declared.Limits
		}
		containers = append(containers, map[string]any{"name": p.name, "resources": resources})
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"spec": map[string]any{"containers": containers}}}})
}

func statusContainers(plans []plan, merged bool) []ContainerResources {
	out := make([]ContainerResources, 0, len(plans))
	for _, p := range plans {
		r := p.current
		if merged {
			r = p.merged
		}
		out = append(out, ContainerResources{Name: p.name, Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()})
	}
	return out
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var scaler VerticalScaler
	if err := r.Get(ctx, req.NamespacedName, &scaler); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	original := scaler.DeepCopy()
	setCondition := func(kind string, ok bool, reason, message string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&scaler.Status.Conditions, metav1.Condition{Type: kind, Status: status,
			Reason: reason, Message: message, ObservedGeneration: scaler.Generation})
	}
	scaler.Status.ObservedGeneration = scaler.Generation
	name := scaler.Spec.DeploymentName

	// One scaler per Deployment: the oldest (creationTimestamp, then name) is active.
	var rivals VerticalScalerList
	if err := r.List(ctx, &rivals, client.InNamespace(scaler.Namespace),
		client.MatchingFields{deploymentIndex: name}); err != nil {
		return reconcile.Result{}, err
	}
	active := &scaler
	for i := range rivals.Items {
		c := &rivals.Items[i]
		if c.CreationTimestamp.Before(&active.CreationTimestamp) ||
			(c.CreationTimestamp.Equal(&active.CreationTimestamp) && c.Name < active.Name) {
			active = c
		}
	}
	if active.Name != scaler.Name {
		setCondition("Ready", false, "Conflict", fmt.Sprintf(
			"VerticalScaler %s already manages Deployment %s; this scaler changes nothing", active.Name, name))
		return reconcile.Result{}, r.writeStatus(ctx, original, &scaler)
	}

	var deployment appsv1.Deployment
	err := r.deployments.Get(ctx, types.NamespacedName{Namespace: scaler.Namespace, Name: name}, &deployment)
	if apierrors.IsNotFound(err) || (err == nil && deployment.DeletionTimestamp != nil) {
		scaler.Status.Deployment = &DeploymentRef{Name: name}
		setCondition("DeploymentFound", false, "NotFound", "Deployment "+name+" does not exist in namespace "+scaler.Namespace)
		setCondition("Ready", false, "Pending", "waiting for Deployment "+name)
		return reconcile.Result{}, r.writeStatus(ctx, original, &scaler)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	scaler.Status.Deployment = &DeploymentRef{Name: name, UID: string(deployment.UID), Found: true}
	setCondition("DeploymentFound", true, "Found", "Deployment "+name+" exists")

	planned, missing := plans(&scaler, &deployment)
	changed := false
	for _, p := range planned {
		changed = changed || p.changed
	}
	scaledOK, reason, message := true, "Applied", "Deployment "+name+" carries the declared resources"
	switch why := invalid(planned); {
	case scaler.Spec.UpdateMode == "Off":
		scaledOK, reason, message = false, "UpdateModeOff", "updateMode is Off: the declared resources are not applied"
		scaler.Status.Containers = statusContainers(planned, true)
	case why != "":
		scaledOK, reason, message = false, "InvalidResources", why+"; nothing was written"
		scaler.Status.Containers = statusContainers(planned, false)
	case changed:
		body, err := patchBody(planned)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := r.Patch(ctx, &deployment, client.RawPatch(types.StrategicMergePatchType, body),
			client.FieldOwner(fieldManager)); err != nil {
			return reconcile.Result{}, err
		}
		now := metav1.Now()
		scaler.Status.LastScaleTime = &now
		scaler.Status.Containers = statusContainers(planned, true)
		r.recorder.Eventf(&scaler, &deployment, corev1.EventTypeNormal, "Scaled", "Patch",
			"set the declared resources on Deployment %s", name)
	default:
		scaler.Status.Containers = statusContainers(planned, false)
	}
	if scaledOK && len(missing) > 0 {
		scaledOK, reason = false, "ContainerNotFound"
		message = "container(s) " + strings.Join(missing, ", ") + " not found in Deployment " + name + "; the others are applied"
	}
	setCondition("Scaled", scaledOK, reason, message)
	if scaledOK {
		setCondition("Ready", true, "UpToDate", message)
	} else {
		setCondition("Ready", false, reason, message)
	}
	return reconcile.Result{}, r.writeStatus(ctx, original, &scaler)
}

// writeStatus patches the status subresource when it changed, with a resourceVersion
// precondition (a 409 returns an error: requeued with backoff).
func (r *Reconciler) writeStatus(ctx context.Context, original, scaler *VerticalScaler) error {
	if equality.Semantic.DeepEqual(original.Status, scaler.Status) {
		return nil
	}
	return r.Status().Patch(ctx, scaler, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
}

func main() {
	metricsAddr := flag.String("metrics-addr", ":8080", "Prometheus /metrics address")
	healthAddr := flag.String("health-addr", ":8081", "/healthz and /readyz address")
	metadataOnly := flag.Bool("metadata-only", false, "watch Deployments as PartialObjectMetadata (builder.OnlyMetadata) and GET them when reconciling")
	workers := flag.Int("workers", 4, "MaxConcurrentReconciles")
	syncPeriod := flag.Duration("sync-period", 10*time.Hour, "cache SyncPeriod (controller-runtime's default: 10h)")
	namespace := flag.String("namespace", "", "watch one namespace only (default all)")
	development := flag.Bool("debug", false, "development (debug) logging")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(*development)))
	log := ctrl.Log.WithName("peer")

	// --kubeconfig (registered by controller-runtime), else $KUBECONFIG; no client-side rate
	// limit (controller-runtime's default since client-go has API priority and fairness).
	config, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading kubeconfig")
		os.Exit(1)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, addToScheme} {
		if err := add(scheme); err != nil {
			log.Error(err, "building the scheme")
			os.Exit(1)
		}
	}
	cacheOptions := cache.Options{SyncPeriod: syncPeriod}
	if *namespace != "" {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOptions,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *healthAddr,
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &VerticalScaler{}, deploymentIndex,
		func(object client.Object) []string {
			return []string{object.(*VerticalScaler).Spec.DeploymentName}
		}); err != nil {
		log.Error(err, "indexing scalers")
		os.Exit(1)
	}
	r := &Reconciler{Client: mgr.GetClient(), deployments: mgr.GetClient(),
		recorder: mgr.GetEventRecorder("vscaler-peer")}
	watchOptions := []builder.WatchesOption{}
	if *metadataOnly {
		r.deployments = mgr.GetAPIReader()
		watchOptions = append(watchOptions, builder.OnlyMetadata)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("verticalscaler").
		For(&VerticalScaler{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.scalersFor), watchOptions...).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(r)
	if err != nil {
		log.Error(err, "creating the controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", func(_ *http.Request) error { return nil }); err != nil {
		log.Error(err, "health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("cache not synced")
		}
		return nil
	}); err != nil {
		log.Error(err, "ready check")
		os.Exit(1)
	}
	log.Info("starting", "metadataOnly", *metadataOnly, "workers", *workers, "syncPeriod", syncPeriod.String())
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
