module example.invalid/panto/bindings/go

go 1.19
