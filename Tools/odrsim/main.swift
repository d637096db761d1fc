print("odrsim: not built yet")
