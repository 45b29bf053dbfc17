module example.invalid/panto/examples/go

go 1.19

require example.invalid/panto/bindings/go v0.0.0

// A local checkout: the binding next door. Once the module is published, drop this line and
// `go get example.invalid/panto/bindings/go`.
replace example.invalid/panto/bindings/go => ../../bindings/go
