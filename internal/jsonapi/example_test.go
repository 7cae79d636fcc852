package jsonapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

// A POST handler of an API whose body is an object with an optional "n":
// every refusal is an {"error": ...} answer with its status.
func Example() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			jsonapi.MethodNotAllowed(w, r, "POST")
			return
		}
		body, err := jsonapi.ReadBody(w, r, 1<<10)
		if err != nil {
			jsonapi.WriteError(w, err.Status, err.Message)
			return
		}
		fields, err := jsonapi.DecodeObject(body, "n")
		if err != nil {
			jsonapi.WriteError(w, err.Status, err.Message)
			return
		}
		jsonapi.WriteJSON(w, http.StatusOK, map[string]string{"n": string(fields["n"])})
	})
	for _, body := range []string{`{"n":3}`, `{"N":3,"m":1}`, `[3]`, strings.Repeat(" ", 2<<10)} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
		fmt.Println(w.Code, w.Body)
	}
	// Output:
	// 200 {"n":"3"}
	// 422 {"error":"unknown fields \"N\", \"m\""}
	// 422 {"error":"invalid JSON body: want an object, got array"}
	// 413 {"error":"request body larger than 1024 bytes"}
}
