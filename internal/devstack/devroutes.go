package devstack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// routeDev adds the runner's own routes under /_dev/.
func (s *Stack) routeDev() {
	s.mux.HandleFunc("GET /_dev/health", s.health)
	// The stack's two public endpoints, as the ApiUrl and WebSocketUrl outputs.
	s.mux.HandleFunc("GET /_dev/urls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"api": s.APIURL, "websocket": s.WebSocketURL})
	})
	s.routeConsole()
	s.mux.HandleFunc("GET /_dev/token", func(w http.ResponseWriter, r *http.Request) {
		sub := r.URL.Query().Get("sub")
		if sub == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "sub is required"})
			return
		}
		if s.jwt == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "the template's HTTP API has no JWT authorizer"})
			return
		}
		ttl := time.Hour
		writeJSON(w, http.StatusOK, map[string]any{"token": s.Token(sub, ttl), "expiresIn": int(ttl.Seconds())})
	})
	s.mux.HandleFunc("GET /_dev/emails", s.emails)
	s.mux.HandleFunc("GET /_dev/queues", func(w http.ResponseWriter, r *http.Request) {
		q, err := s.QueueDepths(r.Context())
		if err != nil {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, q)
	})
	s.mux.HandleFunc("GET /_dev/clock", s.clock)
	s.mux.HandleFunc("POST /_dev/clock", s.clock)
	s.mux.HandleFunc("POST /_dev/scheduler/run", func(w http.ResponseWriter, r *http.Request) {
		// The tick: release messages go to the release queue, whose mapping
		// releases each due partition as it would in AWS.
		n, err := s.Scheduler.Tick(r.Context())
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"partitions": n})
	})
	s.mux.Handle("/_dev/push-subscriptions", s.Push)
	s.mux.Handle("/_dev/push-subscriptions/", s.Push)
	s.mux.Handle("/_dev/push", s.Push)
	s.mux.Handle("/_dev/push/", s.Push)
	s.mux.Handle("/_dev/sns", s.SMS.APIHandler())
	s.mux.Handle("/_dev/sms-voice", s.SMS.SMSVoiceHandler())
	s.mux.Handle("/_dev/sms", s.SMS.ListHandler())
	s.mux.Handle("/_dev/mobile-push", s.SMS.MobileHandler())
	s.routeFaults(s.mux)
	if s.Bus != nil {
		s.mux.Handle("/_dev/eventbridge", s.Bus)
	}
	s.mux.HandleFunc("GET /_dev/events", s.eventsRoute)
	s.mux.HandleFunc("POST /_dev/ses-events", s.sesEventsRoute)
	s.mux.HandleFunc("GET /_dev/calls", func(w http.ResponseWriter, r *http.Request) {
		if fn := r.URL.Query().Get("function"); fn != "" { // e.g. ?function=ApiFunction
			writeJSON(w, http.StatusOK, s.Calls.FunctionSnapshot(fn))
			return
		}
		writeJSON(w, http.StatusOK, s.Calls.Snapshot())
	})
	s.mux.HandleFunc("GET /_dev/iam", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": s.IAM.Calls(), "denials": s.IAM.Denials()})
	})
}

// health answers 200 only when every emulator answers.
func (s *Stack) health(w http.ResponseWriter, r *http.Request) {
	client := &http.Client{Timeout: 2 * time.Second}
	status := map[string]string{}
	ok := true
	for name, url := range map[string]string{"dynamodb": s.Emulators.DynamoDB, "sqs": s.Emulators.SQS, "ses": s.Emulators.SES} {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			status[name], ok = "down", false
			continue
		}
		resp.Body.Close()
		status[name] = "up"
	}
	// The functions' triggers: stream and SQS pollers, the schedule.
	status["functions"] = "up"
	if s.running == nil || s.running.Err() != nil || s.relay == nil || s.Scheduler == nil {
		status["functions"], ok = "down", false
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"ok": ok, "services": status})
}

// emails mirrors the SES emulator's store of sent mail; ?provider=
// ses-secondary the failover region's.
func (s *Stack) emails(w http.ResponseWriter, r *http.Request) {
	store := s.Emulators.SES
	switch r.URL.Query().Get("provider") {
	case "", FaultSESPrimary:
	case FaultSESSecondary:
		if store = s.Emulators.SES2; store == "" {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no email failover region (EmailSecondaryRegion is empty)"})
			return
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "provider: want ses-primary or ses-secondary"})
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, store+"/store", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (s *Stack) clock(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var body struct {
			Advance string `json:"advance"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"advance\": \"<Go duration>\"}"})
			return
		}
		d, err := time.ParseDuration(body.Advance)
		if err != nil || d < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("advance %q: want a non-negative Go duration", body.Advance)})
			return
		}
		s.Clock.Advance(d)
	}
	writeJSON(w, http.StatusOK, map[string]string{"now": s.Clock.Now().UTC().Format(time.RFC3339Nano), "offset": s.Clock.Offset().String()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
