// Command peer-webhook is bench/sections/webhook.sh's controller-runtime peer: a webhook server
// built the way a Go operator builds one (sigs.k8s.io/controller-runtime's webhook.Server and
// webhook.Admission), doing the work vscaler's Deployment hook does minus the patch: decode the
// AdmissionReview (controller-runtime does that), take namespace/name from the metadata of
// object (oldObject on DELETE) and the old generation from oldObject, look the Deployment up in a
// map of scalers, and allow. Only metadata is decoded from the objects (encoding/json still scans
// all of them), the cheapest a Go handler that reads those fields can be.
//
// Usage: peer-webhook -cert-dir DIR [-port N] [-port-file FILE]
// Serves POST /mutate-deployments on 127.0.0.1 over TLS with DIR/tls.crt and DIR/tls.key until
// SIGTERM or SIGINT; writes the bound port to FILE once listening.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// objectMeta is the part of a Deployment the handler reads.
type objectMeta struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
}

type hintHandler struct {
	scalers map[string]string // "namespace/deployment" -> scaler key
	hints   atomic.Int64      // reviews whose lookup hit (vscaler enqueues a hint there)
}

func (h *hintHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	var object objectMeta
	if err := json.Unmarshal(raw, &object); err != nil || object.Metadata.Name == "" {
		return admission.Allowed("")
	}
	namespace := object.Metadata.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	if _, ok := h.scalers[namespace+"/"+object.Metadata.Name]; ok {
		var generation int64
		if req.Operation == admissionv1.Update {
			var old objectMeta
			if json.Unmarshal(req.OldObject.Raw, &old) == nil {
				generation = old.Metadata.Generation
			}
		}
		_ = generation // vscaler's hint: "generation > G"
		h.hints.Add(1)
	}
	return admission.Allowed("")
}

func main() {
	certDir := flag.String("cert-dir", "", "directory holding tls.crt and tls.key")
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: a free one)")
	portFile := flag.String("port-file", "", "write the bound port here once listening")
	flag.Parse()
	if *certDir == "" {
		fmt.Fprintln(os.Stderr, "peer-webhook: -cert-dir is required")
		os.Exit(2)
	}
	if *port == 0 {
		// controller-runtime binds the port itself: find a free one first.
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "peer-webhook:", err)
			os.Exit(1)
		}
		*port = listener.Addr().(*net.TCPAddr).Port
		listener.Close()
	}

	handler := &hintHandler{scalers: map[string]string{}}
	// The Deployment of test/data/admission/deployment-update-20k.json, among other scalers.
	handler.scalers["record/big"] = "record/big"
	for i := 0; i < 1000; i++ {
		handler.scalers[fmt.Sprintf("ns-%d/deployment-%d", i%100, i)] = fmt.Sprintf("ns-%d/scaler-%d", i%100, i)
	}

	server := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: *port, CertDir: *certDir})
	server.Register("/mutate-deployments", &webhook.Admission{Handler: handler})

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Start(ctx) }()
	if *portFile != "" {
		go func() {
			// StartedChecker completes a TLS handshake with the server once it listens.
			started := server.StartedChecker()
			for started(nil) != nil {
				time.Sleep(20 * time.Millisecond)
			}
			_ = os.WriteFile(*portFile, []byte(strconv.Itoa(*port)+"\n"), 0o644)
		}()
	}
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "peer-webhook:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "peer-webhook: stopped; %d lookups hit\n", handler.hints.Load())
}
