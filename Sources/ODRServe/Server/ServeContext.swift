import Hummingbird
import NIOCore

/// The request context of the catalog server: Hummingbird's core storage plus the connection,
/// which the conditioner needs to close connections part way and to name them in the request log.
struct ServeContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}
