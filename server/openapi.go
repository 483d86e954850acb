package server

import _ "embed"

// openAPISpec is the API's OpenAPI 3.1 document, served at /openapi.json.
//
//go:embed openapi.json
var openAPISpec []byte

// OpenAPI returns the API's OpenAPI 3.1 document (JSON), as served at
// GET /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPISpec...) }
