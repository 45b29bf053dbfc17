module panto.invalid/tests/go

go 1.19
