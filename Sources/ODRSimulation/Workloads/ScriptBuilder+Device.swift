import ODRFormat

extension ScriptBuilder {
    /// Adds what the device does on its own over `days`: other apps taking and giving back disk
    /// space, and offline periods.
    mutating func addDeviceActivity(_ device: DeviceSettings, days: Double, random: inout SimulationRandom) {
        let end = days * 86_400
        let swing = Double(device.otherAppsSwing)
        func otherAppsNow() -> Int64 {
            max(0, device.otherAppsBytes + Int64(random.uniform(-swing ... swing)))
        }
        initialOtherAppsBytes = otherAppsNow()
        if device.otherAppsInterval > 0, swing > 0 {
            var t = random.uniform(0.5 ... 1.5) * device.otherAppsInterval
            while t < end {
                otherApps(otherAppsNow(), at: t)
                t += random.uniform(0.5 ... 1.5) * device.otherAppsInterval
            }
        }
        if device.offlineProbability > 0 {
            for day in 0 ..< Int(days.rounded(.up)) where random.chance(device.offlineProbability) {
                let start = Double(day) * 86_400 + random.uniform(0 ... 18) * 3600
                offlineWindows.append(start ..< start + random.uniform(1 ... 6) * 3600)
            }
        }
    }
}
