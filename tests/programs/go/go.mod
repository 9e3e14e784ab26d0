module tdc/programs/sleep

go 1.21
