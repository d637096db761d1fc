import Foundation
import ODRFormat

extension CatalogReport {
    /// Packs drawn one by one in the treemap; the smaller rest share one "other" rectangle.
    static let treemapLimit = 300
    /// Rows of the tag and pack tables; the rest are counted, and `--json` lists them.
    static let tableLimit = 300
    /// Files listed per pack on the page.
    static let filesShown = 10

    /// The report as one self-contained HTML page: inline CSS, an inline SVG treemap and a small
    /// inline script, nothing fetched (its Content-Security-Policy is `default-src 'none'`, with the
    /// style and script allowed by their hashes). Long lists are cut to their largest items and
    /// counted, so the page stays small for catalogs of thousands of tags; the JSON has the rest.
    ///
    /// Every number a row shows is also in a `data-` attribute in bytes (`data-download`,
    /// `data-installed`, `data-update` on the rows of `#tags`; `data-pack` on packs), for tools and tests.
    public func html() -> String {
        var body = ""
        body += header()
        body += treemapSection()
        body += tagsSection()
        if let update { body += updateSection(update) }
        body += deduplicationSection()
        body += warningsSection()
        body += packsSection()
        let data = "<script type=\"application/json\" id=\"odr-packs\">\(HTMLText.scriptData(pagePacks()))</script>\n"
        let policy = "default-src 'none'; style-src \(HTMLText.hashSource(of: Self.style)); script-src \(HTMLText.hashSource(of: Self.script))"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="\(policy)">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTMLText.escaped("\(summary.catalogID) v\(summary.version)")) · odrpack report</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            \(body)\(data)<script>\(Self.script)</script>
            </body>
            </html>

            """
    }

    // MARK: Sections

    private var totalDownload: Int64 { summary.packs.lazy.map(\.archiveBytes).clampedSum() }
    private var totalInstalled: Int64 { summary.packs.lazy.map(\.installedBytes).clampedSum() }

    private func header() -> String {
        var facts: [(String, String)] = [
            ("packs", "\(summary.packs.count) (\(summary.sharedPacks.count) shared)"),
            ("tags", "\(summary.tags.count)"),
            ("files", "\(summary.files)"),
            ("download", ByteCount.format(totalDownload)),
            ("installed", ByteCount.format(totalInstalled)),
            ("deduplication saved", ByteCount.format(summary.bytesSavedByDeduplication)),
        ]
        if !summary.variantAxes.isEmpty { facts.append(("variant axes", summary.variantAxes.summary)) }
        if !device.isEmpty { facts.append(("device", deviceDescription)) }
        if let update { facts.append(("update from", "version \(update.diff.from)")) }
        let list = facts.map { "<div><dt>\(HTMLText.escaped($0.0))</dt><dd>\(HTMLText.escaped($0.1))</dd></div>" }.joined()
        let pointing = summary.distribution.isEmpty ? "" : " · distribution \(summary.distribution)"
        return """
            <header><h1>\(HTMLText.escaped(summary.catalogID)) <small>version \(summary.version)\(HTMLText.escaped(pointing))</small></h1>
            <dl class="facts" id="facts" data-download="\(totalDownload)" data-installed="\(totalInstalled)" \
            data-packs="\(summary.packs.count)" data-tags="\(summary.tags.count)">\(list)</dl></header>

            """
    }

    private var deviceDescription: String {
        device.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.joined(separator: ","))" }.joined(separator: " ")
    }

    /// The packs the treemap draws one by one: the largest ``treemapLimit``.
    private var drawnPacks: [BuildReport.Pack] {
        Array(summary.packs.sorted { ($1.archiveBytes, $0.id) < ($0.archiveBytes, $1.id) }.prefix(Self.treemapLimit))
    }

    private func treemapSection() -> String {
        let width = 1000.0, height = 560.0
        let drawn = drawnPacks
        let position = Dictionary(uniqueKeysWithValues: drawn.enumerated().map { ($1.id, $0) })
        let rest = summary.packs.filter { position[$0.id] == nil }
        let restBytes = rest.lazy.map(\.archiveBytes).clampedSum()
        // Groups: one per tag set, then the rest as one.
        var groups: [(key: [String], packs: [Int])] = []
        var groupOf: [[String]: Int] = [:]
        for (i, pack) in drawn.enumerated() {
            if let g = groupOf[pack.tags] { groups[g].packs.append(i) } else {
                groupOf[pack.tags] = groups.count
                groups.append((pack.tags, [i]))
            }
        }
        func weight(_ bytes: Int64) -> Double { Double(max(bytes, 1)) }
        var weights = groups.map { group in group.packs.reduce(0.0) { $0 + weight(drawn[$1].archiveBytes) } }
        if !rest.isEmpty { weights.append(weight(restBytes)) }
        let boxes = Treemap.layout(weights, in: Treemap.Rect(x: 0, y: 0, width: width, height: height))
        var svg = ""
        var legend = ""
        func number(_ value: Double) -> String { String(Double((value * 10).rounded() / 10)) }
        let hues = Self.hues(of: groups.map(\.key))
        for (g, group) in groups.enumerated() {
            let box = boxes[g]
            let hue = hues[g]
            let inner = Treemap.layout(group.packs.map { weight(drawn[$0].archiveBytes) }, in: box)
            svg += "<g class=\"group\">"
            for (k, i) in group.packs.enumerated() {
                let pack = drawn[i], r = inner[k]
                let light = 58 + (k % 3) * 6
                let label = "[\(pack.tags.joined(separator: ", "))]" + (pack.variant.isEmpty ? "" : " {\(pack.variant.variantDescription)}")
                    + (pack.partCount > 1 ? " part \(pack.part)/\(pack.partCount)" : "")
                    + " · \(ByteCount.format(pack.archiveBytes))" + (pack.shared ? " · shared" : "")
                svg += "<rect class=\"pack\(pack.shared ? " shared" : "")\" data-i=\"\(i)\" data-pack=\"\(pack.id)\" "
                    + "x=\"\(number(r.x))\" y=\"\(number(r.y))\" width=\"\(number(r.width))\" height=\"\(number(r.height))\" "
                    + "fill=\"hsl(\(hue),55%,\(light)%)\"><title>\(HTMLText.escaped(label))</title></rect>"
                if pack.shared, r.width > 2, r.height > 2 {
                    svg += "<rect class=\"hatch\" x=\"\(number(r.x))\" y=\"\(number(r.y))\" width=\"\(number(r.width))\" "
                        + "height=\"\(number(r.height))\" fill=\"url(#hatch)\"/>"
                }
            }
            svg += "<rect class=\"outline\" x=\"\(number(box.x))\" y=\"\(number(box.y))\" width=\"\(number(box.width))\" height=\"\(number(box.height))\"/>"
            if box.width > 60, box.height > 16 {
                let characters = Int(box.width / 7)
                var text = group.key.joined(separator: ", ")
                if text.count > characters { text = String(text.prefix(max(1, characters - 1))) + "…" }
                svg += "<text x=\"\(number(box.x + 4))\" y=\"\(number(box.y + 13))\">\(HTMLText.escaped(text))</text>"
            } else {
                // Too small for its name inside: the legend under the treemap names it.
                // A swatch as SVG: the page's policy allows no inline style attribute.
                legend += "<span><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><rect width=\"10\" height=\"10\" rx=\"2\" "
                    + "fill=\"hsl(\(hue),55%,58%)\"/></svg> \(HTMLText.escaped(group.key.joined(separator: ", ")))</span>"
            }
            svg += "</g>"
        }
        if !rest.isEmpty, let box = boxes.last {
            svg += "<rect class=\"other\" x=\"\(number(box.x))\" y=\"\(number(box.y))\" width=\"\(number(box.width))\" "
                + "height=\"\(number(box.height))\"><title>\(rest.count) smaller packs · \(ByteCount.format(restBytes))</title></rect>"
            if box.width > 120, box.height > 16 {
                svg += "<text x=\"\(number(box.x + 4))\" y=\"\(number(box.y + 13))\">\(rest.count) smaller packs · \(ByteCount.format(restBytes))</text>"
            }
        }
        let note = rest.isEmpty ? "" : " The \(rest.count) smallest packs (\(ByteCount.format(restBytes))) share the grey box; the JSON lists them."
        return """
            <section id="treemap-section"><h2>Packs by download size</h2>
            <p class="hint">Each box is a pack, sized by the bytes a client downloads; a colour is a tag set, hatched boxes are \
            shared by several tags. Point at or click a pack for its tags and largest files.\(HTMLText.escaped(note))</p>
            <div class="split"><svg id="treemap" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="treemap of packs">\
            <defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
            <line x1="0" y1="0" x2="0" y2="8" stroke="#fff" stroke-width="2" stroke-opacity="0.6"/></pattern></defs>\(svg)</svg>
            <aside id="details"><p class="hint">Point at a pack.</p></aside></div>\(legend.isEmpty ? "" : "<p class=\"legend\">Too small to label: \(legend)</p>")</section>

            """
    }

    private func tagsSection() -> String {
        let showDevice = !device.isEmpty
        let sorted = summary.tags.sorted { a, b in
            let (x, y) = showDevice ? (deviceTags[a.name]?.downloadBytes ?? 0, deviceTags[b.name]?.downloadBytes ?? 0) : (a.downloadBytes, b.downloadBytes)
            return (y, a.name) < (x, b.name)
        }
        var rows = ""
        for tag in sorted.prefix(Self.tableLimit) {
            let shared = sharedWith[tag.name] ?? []
            let sharedText = shared.prefix(6).joined(separator: ", ") + (shared.count > 6 ? " and \(shared.count - 6) more" : "")
            var attributes = "data-tag=\"\(HTMLText.escaped(tag.name))\" data-download=\"\(tag.downloadBytes)\" data-installed=\"\(tag.installedBytes)\""
            var cells = "<td>\(HTMLText.escaped(tag.name))</td>" + bytesCell(tag.downloadBytes) + bytesCell(tag.installedBytes)
            if showDevice {
                let chosen = deviceTags[tag.name]
                attributes += " data-device-download=\"\(chosen?.downloadBytes ?? 0)\" data-device-installed=\"\(chosen?.installedBytes ?? 0)\""
                cells += bytesCell(chosen?.downloadBytes ?? 0) + bytesCell(chosen?.installedBytes ?? 0)
            }
            if let update {
                let cost = update.tagDownloadBytes[tag.name] ?? 0
                attributes += " data-update=\"\(cost)\""
                cells += bytesCell(cost)
            }
            cells += "<td class=\"n\" data-v=\"\(tag.packs.count)\">\(tag.packs.count)</td><td class=\"n\" data-v=\"\(tag.files)\">\(tag.files)</td>"
                + "<td>\(HTMLText.escaped(sharedText))</td>"
            rows += "<tr \(attributes)>\(cells)</tr>\n"
        }
        var heads = "<th data-sort=\"text\">tag</th><th data-sort=\"n\">download</th><th data-sort=\"n\">installed</th>"
        if showDevice {
            let name = HTMLText.escaped(deviceDescription)
            heads += "<th data-sort=\"n\">download ({\(name)})</th><th data-sort=\"n\">installed ({\(name)})</th>"
        }
        if let update { heads += "<th data-sort=\"n\">update from \(update.diff.from)</th>" }
        heads += "<th data-sort=\"n\">packs</th><th data-sort=\"n\">files</th><th>shares packs with</th>"
        let more = summary.tags.count > Self.tableLimit
            ? "<p class=\"more\">\(summary.tags.count - Self.tableLimit) smaller tags not shown; <code>odrpack report --json</code> lists every tag.</p>" : ""
        let note = (summary.variantAxes.isEmpty ? "" : " Download and installed are over every variant" + (showDevice ? "; the device columns are what the chosen device downloads." : "."))
            + (update == nil ? "" : " The update column is what a client holding the tag's packs of version \(update!.diff.from) downloads, "
                + "entry by entry under the runtime's fetch plan (files it already holds are not fetched again).")
        return """
            <section id="tags-section"><h2>Tags (\(summary.tags.count))</h2>
            <p class="hint">What a client with nothing installed downloads and installs to use each tag.\(HTMLText.escaped(note)) Click a heading to sort.</p>
            <table id="tags" class="sortable"><thead><tr>\(heads)</tr></thead><tbody>
            \(rows)</tbody></table>\(more)</section>

            """
    }

    private func bytesCell(_ bytes: Int64) -> String {
        "<td class=\"n\" data-v=\"\(bytes)\">\(ByteCount.format(bytes))</td>"
    }

    private func updateSection(_ update: Update) -> String {
        let diff = update.diff
        func list(_ title: String, _ items: [String], id: String) -> String {
            guard !items.isEmpty else { return "" }
            let shown = items.prefix(50).map { "<li>\(HTMLText.escaped($0))</li>" }.joined()
            let more = items.count > 50 ? "<li class=\"more\">… \(items.count - 50) more</li>" : ""
            return "<details id=\"\(id)\" data-count=\"\(items.count)\"><summary>\(HTMLText.escaped(title)) (\(items.count))</summary><ul>\(shown)\(more)</ul></details>"
        }
        let whole = diff.downloadBytes < diff.archiveBytes
            ? " of the new packs' \(ByteCount.format(diff.archiveBytes)) (only the entries it does not hold)" : ""
        return """
            <section id="update-section" data-from="\(diff.from)" data-download="\(diff.downloadBytes)" data-archive="\(diff.archiveBytes)">\
            <h2>Update from version \(diff.from)</h2>
            <p>A client holding every pack of version \(diff.from) downloads <b>\(ByteCount.format(diff.downloadBytes))</b>\(whole). \
            Packs: \(diff.addedPacks.count) new, \(diff.removedPacks.count) removed, \(diff.keptPacks) kept. \
            Per tag, see the update column of the tag table.</p>
            \(list("tags added", diff.addedTags, id: "tags-added"))\(list("tags removed", diff.removedTags, id: "tags-removed"))\
            \(list("files added", diff.addedFiles, id: "files-added"))\(list("files changed", diff.changedFiles, id: "files-changed"))\
            \(list("files removed", diff.removedFiles, id: "files-removed"))</section>

            """
    }

    private func deduplicationSection() -> String {
        let rows = duplicates.map { item -> String in
            let paths = item.paths.prefix(5).joined(separator: ", ") + (item.pathCount > 5 ? " and \(item.pathCount - 5) more" : "")
            let packs = item.packs.count == 1 ? "one pack" : "\(item.packs.count) packs"
            return "<tr><td><code>\(item.sha256.prefix(12))</code></td>\(bytesCell(item.size))<td class=\"n\">\(item.pathCount)</td>"
                + "\(bytesCell(item.repeatedBytes))<td>\(packs)</td><td>\(HTMLText.escaped(paths))</td></tr>"
        }.joined(separator: "\n")
        return """
            <section id="dedup-section" data-saved="\(summary.bytesSavedByDeduplication)"><h2>Deduplication</h2>
            <p>\(summary.duplicateFiles) file(s) share content with another path of their pack and are stored once: \
            <b>\(ByteCount.format(summary.bytesSavedByDeduplication))</b> saved. Content stored in more than one pack \
            (different tag sets) is stored once per pack.</p>
            \(duplicates.isEmpty ? "" : "<table id=\"duplicates\"><thead><tr><th>content</th><th>size</th><th>paths</th><th>repeated</th><th>stored in</th><th>where</th></tr></thead><tbody>\n\(rows)</tbody></table>")</section>

            """
    }

    private func warningsSection() -> String {
        let budget = summary.initialInstallAndPrefetchTags.isEmpty ? "No initial-install or prefetch tags."
            : "Initial install + prefetch [\(summary.initialInstallAndPrefetchTags.joined(separator: ", "))]: "
                + "\(ByteCount.format(summary.initialInstallAndPrefetchBytes)) of the \(ByteCount.format(summary.initialInstallAndPrefetchBudget)) budget."
        let items = summary.warnings.prefix(100).map {
            "<li data-code=\"\(HTMLText.escaped($0.code.rawValue))\"><b>\(HTMLText.escaped($0.code.rawValue))</b> \(HTMLText.escaped($0.message))</li>"
        }.joined()
        let buildOnly = summary.hashedFiles == 0 && summary.writtenPacks == summary.packs.count && summary.followedLinks == 0
        return """
            <section id="warnings-section"><h2>Budget and warnings</h2>
            <p data-budget="\(summary.initialInstallAndPrefetchBytes)">\(HTMLText.escaped(budget))</p>
            \(summary.warnings.isEmpty ? "<p>No warnings.</p>" : "<ul id=\"warnings\">\(items)</ul>")\
            \(buildOnly ? "<p class=\"hint\">Skipped symbolic links and untagged files are known only while building: <code>odrpack build --report-html</code> lists them.</p>" : "")</section>

            """
    }

    private func packsSection() -> String {
        let sorted = summary.packs.sorted { ($1.archiveBytes, $0.id) < ($0.archiveBytes, $1.id) }
        let rows = sorted.prefix(Self.tableLimit).map { pack -> String in
            let flags = [pack.shared ? "shared" : nil, pack.reused ? "reused" : nil].compactMap { $0 }.joined(separator: ", ")
            let variant = pack.variant.isEmpty ? "" : pack.variant.variantDescription
            return "<tr data-pack=\"\(pack.id)\" data-download=\"\(pack.archiveBytes)\" data-installed=\"\(pack.installedBytes)\">"
                + "<td><code>\(pack.id.prefix(12))</code></td><td>\(HTMLText.escaped(pack.tags.joined(separator: ", ")))</td>"
                + "<td>\(HTMLText.escaped(variant))</td><td class=\"n\">\(pack.partCount > 1 ? "\(pack.part)/\(pack.partCount)" : "")</td>"
                + bytesCell(pack.archiveBytes) + bytesCell(pack.installedBytes)
                + "<td class=\"n\" data-v=\"\(pack.files)\">\(pack.files)</td><td>\(flags)</td></tr>"
        }.joined(separator: "\n")
        let more = summary.packs.count > Self.tableLimit
            ? "<p class=\"more\">\(summary.packs.count - Self.tableLimit) smaller packs not shown; <code>odrpack report --json</code> lists every pack.</p>" : ""
        return """
            <section id="packs-section"><h2>Packs (\(summary.packs.count))</h2>
            <table id="packs" class="sortable"><thead><tr><th data-sort="text">pack</th><th data-sort="text">tags</th><th data-sort="text">variant</th>\
            <th>part</th><th data-sort="n">download</th><th data-sort="n">installed</th><th data-sort="n">files</th><th></th></tr></thead><tbody>
            \(rows)</tbody></table>\(more)</section>

            """
    }

    // MARK: Data for the script

    private struct PagePack: Encodable {
        var id: String
        var tags: [String]
        var variant: String
        var part: Int
        var parts: Int
        var entries: Int
        var files: Int
        var download: Int64
        var installed: Int64
        var shared: Bool
        var reused: Bool
        /// Largest files: [path, size, stored size, deflated (1 or 0)].
        var largest: [[String]]
    }

    /// What the script shows for each drawn pack, in the order of the treemap's `data-i`.
    private func pagePacks() -> [PagePack] {
        drawnPacks.map { pack in
            PagePack(
                id: pack.id, tags: pack.tags, variant: pack.variant.variantDescription, part: pack.part, parts: pack.partCount,
                entries: pack.entries, files: pack.files, download: pack.archiveBytes, installed: pack.installedBytes,
                shared: pack.shared, reused: pack.reused,
                largest: (packFiles[pack.id] ?? []).prefix(Self.filesShown).map { file in
                    [file.path + (file.variant.isEmpty ? "" : " [\(file.variant.variantDescription)]"), String(file.size),
                     String(file.storedSize), file.deflated ? "1" : "0"]
                })
        }
    }

    /// A hue for each tag set: the sets in name order step around the colour wheel by the golden
    /// angle (137.5°), so that any two of a report's first dozen sets are at least 20° apart
    /// (a hash of the names gave `level1` and `level5` nearly the same purple). The same tag sets
    /// get the same hues in every report of them.
    static func hues(of tagSets: [[String]]) -> [Int] {
        let ranks = Dictionary(tagSets.map { $0.joined(separator: ",") }.sorted().enumerated().map { ($1, $0) },
                               uniquingKeysWith: { first, _ in first })
        return tagSets.map { tags in
            let rank = ranks[tags.joined(separator: ",")] ?? 0
            return Int((Double(rank) * 137.508).truncatingRemainder(dividingBy: 360).rounded(.down))
        }
    }

    // MARK: Style and script

    static let style = #"""
        :root{color-scheme:light;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232b;background:#f6f7f9}
        body{margin:0 auto;max-width:1280px;padding:16px 24px 48px}
        h1{font-size:22px;margin:8px 0}h1 small{font-weight:400;color:#5b6675;font-size:15px}
        h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2e8;padding-bottom:4px}
        .facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:0}.facts dt{font-size:12px;color:#5b6675}.facts dd{margin:0;font-weight:600}
        .hint{color:#5b6675;font-size:13px}.more{color:#5b6675;font-style:italic}
        .split{display:grid;grid-template-columns:minmax(0,3fr) minmax(220px,1fr);gap:16px;align-items:start}
        #treemap{width:100%;height:auto;background:#fff;border:1px solid #dde2e8;border-radius:4px}
        #treemap .pack{stroke:#fff;stroke-width:.6;cursor:pointer}#treemap .pack:hover,#treemap .pack.on{stroke:#1d232b;stroke-width:2}
        #treemap .hatch,#treemap text{pointer-events:none}#treemap .outline{fill:none;stroke:#fff;stroke-width:2;pointer-events:none}
        #treemap text{font-size:11px;fill:#1d232b}#treemap .other{fill:#c9ced6;stroke:#fff}
        #details{background:#fff;border:1px solid #dde2e8;border-radius:4px;padding:8px 12px;font-size:13px;overflow-wrap:anywhere}
        .legend{font-size:13px;color:#5b6675}.legend span{margin-left:12px;white-space:nowrap}.legend svg{vertical-align:-1px}
        #details h3{font-size:14px;margin:4px 0}#details table{width:100%}
        table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
        th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eceff3;vertical-align:top}
        th{background:#eef1f5;position:sticky;top:0}th[data-sort]{cursor:pointer}td.n{text-align:right;white-space:nowrap}
        code{font-size:12px}details{margin:4px 0}ul{margin:4px 0;padding-left:20px}
        #warnings li{margin:3px 0}#warnings b{color:#9a4a00;font-weight:600}
        @media (max-width:800px){.split{grid-template-columns:1fr}}
        """#

    static let script = #"""
        (function(){
        var packs=JSON.parse(document.getElementById('odr-packs').textContent);
        var panel=document.getElementById('details'),current=null;
        function fmt(n){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(Math.abs(n)>=1024&&i<4){n/=1024;i++}return i?(Math.round(n*10)/10)+' '+u[i]:n+' B'}
        function add(parent,tag,text){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;parent.appendChild(e);return e}
        function show(rect){
          var p=packs[+rect.getAttribute('data-i')];if(!p)return;
          if(current)current.classList.remove('on');current=rect;rect.classList.add('on');
          panel.textContent='';
          var names=p.tags.length>8?p.tags.slice(0,8).join(', ')+' and '+(p.tags.length-8)+' more':p.tags.join(', ');
          add(panel,'h3','['+names+']'+(p.variant?' {'+p.variant+'}':'')+(p.parts>1?' part '+p.part+'/'+p.parts:''));
          add(panel,'p',fmt(p.download)+' download, '+fmt(p.installed)+' installed; '+p.files+' files in '+p.entries+' entries'+(p.shared?'; shared by '+p.tags.length+' tags':'')+(p.reused?'; reused from an earlier version':''));
          add(add(panel,'p'),'code',p.id);
          if(p.largest.length){
            var t=add(panel,'table'),h=add(add(t,'thead'),'tr');add(h,'th','largest files');add(h,'th','size');add(h,'th','stored');
            var b=add(t,'tbody');
            p.largest.forEach(function(f){var r=add(b,'tr');add(r,'td',f[0]);add(r,'td',fmt(+f[1])).className='n';add(r,'td',f[3]==='1'?fmt(+f[2]):'as is').className='n'});
            if(p.files>p.largest.length)add(panel,'p',(p.files-p.largest.length)+' more files').className='more';
          }
        }
        var map=document.getElementById('treemap');
        function pick(e){var t=e.target;if(t&&t.getAttribute&&t.getAttribute('data-i')!==null)show(t)}
        map.addEventListener('mouseover',pick);map.addEventListener('click',pick);
        Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(table){
          Array.prototype.forEach.call(table.querySelectorAll('th[data-sort]'),function(th,col){
            var down=true;
            th.addEventListener('click',function(){
              var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows),numeric=th.getAttribute('data-sort')==='n';
              var index=th.cellIndex;
              rows.sort(function(a,b){var x=a.cells[index],y=b.cells[index];
                var c=numeric?(+x.getAttribute('data-v'))-(+y.getAttribute('data-v')):x.textContent.localeCompare(y.textContent);
                return down?-c:c});
              down=!down;rows.forEach(function(r){body.appendChild(r)});
            });
          });
        });
        var first=map.querySelector('[data-i="0"]');if(first)show(first);
        document.documentElement.setAttribute('data-ready',Math.round(performance.now()));
        })();
        """#
}
