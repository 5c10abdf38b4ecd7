// Package contracttest validates requests and answers against the stock
// service contract (contract.OpenAPI) with kin-openapi's openapi3filter,
// for tests: a service's tests drive its real handler and check every
// exchange; the contract's own tests check the client's requests. It is
// imported by tests only, so the bench does not carry kin-openapi.
package contracttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/seckill-lab/seckill/bench/contract"
)

// Validator checks exchanges against the contract's OpenAPI document.
type Validator struct {
	Doc    *openapi3.T
	router routers.Router
}

// New loads contract.OpenAPI and validates the document itself.
func New() (*Validator, error) {
	doc, err := openapi3.NewLoader().LoadFromData(contract.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("load the contract: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the contract is not a valid OpenAPI document: %w", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the contract: %w", err)
	}
	return &Validator{Doc: doc, router: r}, nil
}

// options are strict: an answer's status must be one the call lists;
// the bearer token is not checked (the contract makes it optional).
var options = &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}

// Exchange is one request to a contract call, to validate it and the
// answers to it.
type Exchange struct {
	input *openapi3filter.RequestValidationInput
}

// Route finds req's call in the contract: an error for a request to no
// call of it.
func (v *Validator) Route(req *http.Request) (*Exchange, error) {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s is no call of the contract: %w", req.Method, req.URL.Path, err)
	}
	return &Exchange{&openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options}}, nil
}

// Request validates the request with body as its body.
func (e *Exchange) Request(body []byte) error {
	req := e.input.Request
	req.Body = io.NopCloser(bytes.NewReader(body))
	defer func() { req.Body = io.NopCloser(bytes.NewReader(body)) }()
	if err := openapi3filter.ValidateRequest(context.Background(), e.input); err != nil {
		return fmt.Errorf("request %s %s: %w", req.Method, req.URL, err)
	}
	return nil
}

// Response validates an answer to the request: its status, header and
// body.
func (e *Exchange) Response(status int, header http.Header, body []byte) error {
	in := &openapi3filter.ResponseValidationInput{RequestValidationInput: e.input, Status: status, Header: header, Options: options}
	if err := openapi3filter.ValidateResponse(context.Background(), in.SetBodyBytes(body)); err != nil {
		return fmt.Errorf("answer %d to %s %s: %w", status, e.input.Request.Method, e.input.Request.URL, err)
	}
	return nil
}
