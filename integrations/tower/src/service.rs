//! The builder, the layer and the service.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use leaparray::export::{ExportError, Exposition};
use leaparray::keyed::{Headroom, KeyHasher, Occupancy};
use leaparray::Gate;
use tower::{Layer, Service};

use crate::clock::LayerClock;
use crate::config::{
    make_table, AdmittedFields, ConfigError, Key, Mode, Policy, DEFAULT_CAPACITY, MAX_GLOBAL,
};
use crate::limits::{window_of, Fields, PerKey, Shared};

/// The future of a request that waits ([`Mode::Wait`]), inside a
/// [`ResponseFuture`]: boxed (one allocation per waiting request; an
/// admitted or refused request's future is not boxed).
///
/// ```
/// use leaparray_tower::BoxFuture;
/// let f: BoxFuture<u8, ()> = Box::pin(async { Ok(1) });
/// # drop(f);
/// ```
pub type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

/// Put into an admitted request's extensions when the layer was built
/// with [`Builder::admission_extension`]: the time (µs of
/// [`RateLimitLayer::clock`]) its limits were checked at, for handlers
/// that keep their own books (the example server's ledger).
///
/// ```
/// use leaparray_tower::Admission;
/// let a = Admission { now: 1_500_000 };
/// assert_eq!(a.now / 500_000, 3); // the window of 500 ms it was decided in
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Admission {
    /// The clock reading the decision used.
    pub now: u64,
}

/// Collects the limits and the mode; [`build`](Self::build) checks them.
///
/// ```
/// use std::time::Duration;
/// use leaparray_tower::{Key, Mode, RateLimitLayer};
/// let layer = RateLimitLayer::builder()
///     .per_key_with_capacity("ip", 10, Duration::from_secs(1), Key::peer_ip(), 1024)
///     .global("second", 1_000, Duration::from_secs(1))
///     .global("minute", 30_000, Duration::from_secs(60))
///     .mode(Mode::Wait { max_waiting: 100, max_delay: Duration::from_secs(1) })
///     .build()
///     .unwrap();
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Default)]
pub struct Builder {
    /// The per-key limit, its key and its table's capacity.
    per_key: Option<(Policy, Key, usize)>,
    global: Vec<Policy>,
    mode: Mode,
    admission: bool,
    admitted: AdmittedFields,
}

impl Builder {
    /// At most `limit` requests per `per` for each key, in a table of
    /// [`DEFAULT_CAPACITY`] keys at a time (keys idle for two intervals are
    /// recycled; with the table full around a new key, the key its probe
    /// values least is evicted and its counts remembered, so that no key,
    /// evicted or not, passes its limit: `leaparray::keyed::Overflow::Evict`).
    /// Replaces an earlier per-key limit.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::{Key, RateLimitLayer};
    /// let b = RateLimitLayer::builder().per_key("ip", 5, Duration::from_secs(1), Key::peer_ip());
    /// assert!(b.build().is_ok());
    /// ```
    #[must_use]
    pub fn per_key(self, name: &str, limit: u64, per: Duration, key: Key) -> Self {
        self.per_key_with_capacity(name, limit, per, key, DEFAULT_CAPACITY)
    }

    /// [`per_key`](Self::per_key) with a table of `capacity` keys, any
    /// number from 1 (48 bytes each, the slot and the memory of evicted
    /// keys, allocated at once on the heap when the layer is built): from
    /// configuration, sized to the clients you expect at once. 0, or a
    /// table that cannot be allocated, is [`ConfigError::Capacity`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::{ConfigError, Key, RateLimitLayer};
    /// let slots = 100_000; // e.g. from a configuration file
    /// let s = Duration::from_secs(1);
    /// let b = RateLimitLayer::builder().per_key_with_capacity("ip", 5, s, Key::peer_ip(), slots);
    /// assert!(b.build().is_ok());
    /// let b = RateLimitLayer::builder().per_key_with_capacity("ip", 5, s, Key::peer_ip(), 0);
    /// assert_eq!(b.build().unwrap_err(), ConfigError::Capacity { policy: "ip".into(), capacity: 0 });
    /// ```
    #[must_use]
    pub fn per_key_with_capacity(
        mut self,
        name: &str,
        limit: u64,
        per: Duration,
        key: Key,
        capacity: usize,
    ) -> Self {
        let policy = Policy {
            name: name.to_owned(),
            limit,
            per,
        };
        self.per_key = Some((policy, key, capacity));
        self
    }

    /// At most `limit` requests per `per` through every clone of the
    /// service together. Up to [`MAX_GLOBAL`] of them, all checked at
    /// once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::RateLimitLayer;
    /// let b = RateLimitLayer::builder().global("all", 1_000, Duration::from_millis(100));
    /// assert!(b.build().is_ok());
    /// ```
    #[must_use]
    pub fn global(mut self, name: &str, limit: u64, per: Duration) -> Self {
        self.global.push(Policy {
            name: name.to_owned(),
            limit,
            per,
        });
        self
    }

    /// Refuse (the default) or wait.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::{Mode, RateLimitLayer};
    /// let b = RateLimitLayer::builder()
    ///     .global("all", 1, Duration::from_secs(1))
    ///     .mode(Mode::Wait { max_waiting: 8, max_delay: Duration::from_secs(1) });
    /// assert!(b.build().is_ok());
    /// ```
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Put an [`Admission`] into every admitted request's extensions (off
    /// by default: it costs an allocation per request).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::RateLimitLayer;
    /// let b = RateLimitLayer::builder().global("all", 10, Duration::from_secs(1)).admission_extension();
    /// assert!(b.build().is_ok());
    /// ```
    #[must_use]
    pub fn admission_extension(mut self) -> Self {
        self.admission = true;
        self
    }

    /// The fields an admitted response carries: [`AdmittedFields::RateLimit`]
    /// (the default), `Both` (`RateLimit-Policy` too) or `None` (only
    /// refusals carry them; an admission then costs no formatting and no
    /// second look at the limits). The crate README's "Numbers" give each
    /// one's cost per request.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_tower::{AdmittedFields, RateLimitLayer};
    /// let b = RateLimitLayer::builder()
    ///     .global("all", 10, Duration::from_secs(1))
    ///     .admitted_fields(AdmittedFields::None);
    /// assert!(b.build().is_ok());
    /// ```
    #[must_use]
    pub fn admitted_fields(mut self, fields: AdmittedFields) -> Self {
        self.admitted = fields;
        self
    }

    /// The layer, or why the configuration is refused: no limit, a zero
    /// limit, an interval that is not a whole even number of µs, a per-key
    /// limit over `KeyedGate::max_limit` (32,767), a global one over
    /// `leaparray::MAX_COUNT` (2^47 - 1), more than [`MAX_GLOBAL`] global
    /// limits, a bad or duplicate name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leaparray_tower::{ConfigError, Key, RateLimitLayer};
    /// let e = RateLimitLayer::builder()
    ///     .per_key("ip", 1 << 20, Duration::from_secs(1), Key::peer_ip())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(e, ConfigError::LimitTooLarge { policy: "ip".into(), max: 32_767 });
    /// let e = RateLimitLayer::builder().global("g", 1, Duration::ZERO).build().unwrap_err();
    /// assert_eq!(e, ConfigError::Interval { policy: "g".into() });
    /// ```
    pub fn build(self) -> Result<RateLimitLayer, ConfigError> {
        if self.per_key.is_none() && self.global.is_empty() {
            return Err(ConfigError::NoLimits);
        }
        if self.global.len() > MAX_GLOBAL {
            return Err(ConfigError::TooManyGlobal);
        }
        if let Some((_, key, _)) = &self.per_key {
            key.check()?;
        }
        let mut names: Vec<&str> = Vec::new();
        for p in self.per_key.iter().map(|(p, _, _)| p).chain(&self.global) {
            p.check_name()?;
            p.window()?;
            if names.contains(&p.name.as_str()) {
                return Err(ConfigError::DuplicateName {
                    policy: p.name.clone(),
                });
            }
            names.push(&p.name);
        }
        let per_key = match self.per_key {
            Some((policy, key, capacity)) => Some(PerKey {
                table: make_table(capacity, window_of(&policy), &policy)?,
                policy,
                key,
                hasher: KeyHasher::new(),
                refused: std::sync::atomic::AtomicU64::new(0),
            }),
            None => None,
        };
        if let Some(p) = self.global.iter().find(|p| p.limit > leaparray::MAX_COUNT) {
            // A gate counts up to `MAX_COUNT` (and would act as if its
            // limit were that, while the fields advertise this one).
            return Err(ConfigError::LimitTooLarge {
                policy: p.name.clone(),
                max: leaparray::MAX_COUNT,
            });
        }
        let global = self
            .global
            .into_iter()
            .map(|p| {
                // No prioritized requests: the widest limit in one word.
                let g = Gate::new(window_of(&p), p.limit).with_occupy_timeout(0);
                (p, g)
            })
            .collect();
        Ok(RateLimitLayer {
            shared: Arc::new(Shared::new(
                per_key,
                global,
                self.mode,
                self.admission,
                self.admitted,
            )),
        })
    }
}

/// The layer: every service it makes, and every clone of those, counts
/// against the same limits.
///
/// ```
/// use std::time::Duration;
/// use leaparray_tower::RateLimitLayer;
/// let layer = RateLimitLayer::builder().global("g", 10, Duration::from_secs(1)).build().unwrap();
/// let svc = tower::ServiceBuilder::new().layer(layer.clone()).service(tower::service_fn(
///     |_req: http::Request<()>| async { Ok::<_, std::convert::Infallible>(http::Response::new(String::new())) },
/// ));
/// # let _ = svc;
/// ```
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    shared: Arc<Shared>,
}

impl RateLimitLayer {
    /// A builder with no limits yet.
    ///
    /// ```
    /// use leaparray_tower::{ConfigError, RateLimitLayer};
    /// assert_eq!(RateLimitLayer::builder().build().unwrap_err(), ConfigError::NoLimits);
    /// ```
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The clock the decisions read (µs since the layer was built): the
    /// time base of [`Admission::now`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray::clock::Clock;
    /// # use leaparray_tower::RateLimitLayer;
    /// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(1)).build().unwrap();
    /// assert!(layer.clock().now() < 60_000_000);
    /// ```
    #[must_use]
    pub fn clock(&self) -> LayerClock {
        self.shared.clock.clone()
    }

    /// The per-key table's occupancy now, if there is a per-key limit: keys
    /// resident, of those idle for two intervals; since the layer was
    /// built, slots recycled, keys evicted to make room for a new key
    /// (`evicted`), keys that came back after an eviction and started from
    /// the estimate the table remembered of them (`remembered`), and
    /// decisions made with no slot for the key (`overflowed`). A flood of new keys
    /// shows as `resident` at the capacity and `evicted` climbing; its keys
    /// coming back, as `remembered` climbing. The requests the table
    /// refused are in [`export`](Self::export) (`refused_total`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray_tower::{Key, RateLimitLayer};
    /// let layer = RateLimitLayer::builder()
    ///     .per_key("ip", 5, Duration::from_secs(1), Key::peer_ip())
    ///     .build()
    ///     .unwrap();
    /// let occ = layer.occupancy().unwrap();
    /// assert_eq!((occ.resident, occ.evicted, occ.remembered), (0, 0, 0));
    /// ```
    #[must_use]
    pub fn occupancy(&self) -> Option<Occupancy> {
        let now = self.shared.now();
        self.shared
            .per_key
            .as_ref()
            .map(|pk| pk.table.occupancy(now))
    }

    /// `429` answers since the layer was built, whichever limit refused
    /// (a plain count, for your own metrics; [`export`](Self::export) has
    /// the per-key table's refusals).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::RateLimitLayer;
    /// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(1)).build().unwrap();
    /// assert_eq!(layer.refused(), 0);
    /// ```
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.shared
            .refused
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Adds the layer's limits, read now, to a Prometheus exposition: the
    /// per-key table as a keyed resource (`keyed_resident`,
    /// `keyed_evicted_total`, `keyed_remembered_total`, ...: see
    /// [`occupancy`](Self::occupancy)) with `refused_total`, the
    /// decisions its table refused (every try of a waiting request), and
    /// each global limit as a gate (`gate_load`, `gate_remaining`, ...),
    /// each named by its policy. An
    /// error (a resource of that name already in `e`) leaves the resources
    /// added before it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaparray::export::Exposition;
    /// use leaparray_tower::{Key, RateLimitLayer};
    /// let layer = RateLimitLayer::builder()
    ///     .per_key("ip", 5, Duration::from_secs(1), Key::peer_ip())
    ///     .global("all", 100, Duration::from_secs(1))
    ///     .build()
    ///     .unwrap();
    /// let mut e = Exposition::new("api").unwrap();
    /// layer.export(&mut e).unwrap();
    /// let text = e.to_string();
    /// assert!(text.contains("api_keyed_resident{resource=\"ip\"} 0\n"));
    /// assert!(text.contains("api_keyed_evicted_total{resource=\"ip\"} 0\n"));
    /// assert!(text.contains("api_refused_total{resource=\"ip\"} 0\n"));
    /// assert!(text.contains("api_gate_remaining{resource=\"all\"} 100\n"));
    /// ```
    pub fn export(&self, e: &mut Exposition) -> Result<(), ExportError> {
        let now = self.shared.now();
        if let Some(pk) = &self.shared.per_key {
            e.keyed(&pk.policy.name, &pk.table, now)?;
            let refused = pk.refused.load(std::sync::atomic::Ordering::Relaxed);
            e.refused(&pk.policy.name, refused)?;
        }
        for (p, g) in &self.shared.global {
            e.gate(&p.name, g, now)?;
        }
        Ok(())
    }

    /// Requests waiting now ([`Mode::Wait`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use leaparray_tower::RateLimitLayer;
    /// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(1)).build().unwrap();
    /// assert_eq!(layer.waiting(), 0);
    /// ```
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.shared
            .waiting
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service: `inner` behind the limits. `Clone` (if `inner` is), every
/// clone sharing the limits.
///
/// ```
/// use std::time::Duration;
/// use tower::{Layer, Service, ServiceExt};
/// use leaparray_tower::RateLimitLayer;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(60)).build().unwrap();
/// let svc = layer.layer(tower::service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("hello")))
/// }));
/// let first = svc.clone().oneshot(http::Request::new(())).await.unwrap();
/// assert_eq!(first.status(), 200);
/// let second = svc.clone().oneshot(http::Request::new(())).await.unwrap(); // another clone
/// assert_eq!(second.status(), 429);
/// assert_eq!(second.headers()["retry-after"], "60");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RateLimit<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S, B, ResBody> Service<Request<B>> for RateLimit<S>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let shared = &self.shared;
        // The request is taken apart only for a `Key::function`, which
        // reads its parts.
        let key = match &shared.per_key {
            Some(pk) if pk.key.needs_parts() => {
                let (parts, body) = req.into_parts();
                let key = pk.key.of_parts(&parts, &pk.hasher);
                req = Request::from_parts(parts, body);
                Some(key)
            }
            Some(pk) => Some(pk.key.of(&req, &pk.hasher)),
            None => None,
        };
        let now = shared.now();
        let retry = match shared.decide(key, now) {
            Ok(left) => {
                if shared.admission {
                    req.extensions_mut().insert(Admission { now });
                }
                // The headers are those of the decision's time; the inner
                // service, readied by `poll_ready`, is called at once.
                let fields = shared.admitted(key, now, left);
                return ResponseFuture {
                    state: State::Admitted {
                        inner: self.inner.call(req),
                        fields,
                    },
                };
            }
            Err(retry) => retry,
        };
        ResponseFuture {
            state: self.refused(req, key, now, retry),
        }
    }
}

impl<S: Clone> RateLimit<S> {
    /// A refused request: wait ([`Mode::Wait`], if there is a place and the
    /// wait is short enough) or a ready `429`. Apart from `call`, so that
    /// the admitted path stays small.
    #[inline(never)]
    fn refused<B, ResBody>(
        &mut self,
        req: Request<B>,
        key: Option<u64>,
        now: u64,
        retry: u64,
    ) -> State<S::Future, ResBody, S::Error>
    where
        S: Service<Request<B>, Response = Response<ResBody>> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Send + 'static,
        B: Send + 'static,
        ResBody: Default + Send + 'static,
    {
        let shared = &self.shared;
        match shared.mode {
            Mode::Wait {
                max_waiting,
                max_delay,
            } if u128::from(retry) <= max_delay.as_micros() => {
                match shared.wait_slot(max_waiting) {
                    Some(slot) => {
                        // The readied service goes with the request that
                        // waits; a clone stays.
                        let fresh = self.inner.clone();
                        let inner = std::mem::replace(&mut self.inner, fresh);
                        let shared = shared.clone();
                        State::Waiting {
                            future: Box::pin(waiting(
                                inner, req, shared, key, retry, max_delay, slot,
                            )),
                        }
                    }
                    None => State::Ready {
                        response: Some(shared.refusal(key, now, retry)),
                    },
                }
            }
            _ => State::Ready {
                response: Some(shared.refusal(key, now, retry)),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`RateLimit`]: the inner service's future for an
    /// admitted request (its response gets the `RateLimit` fields), a
    /// ready `429`, or a waiting request ([`Mode::Wait`], boxed).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower::{Layer, Service, ServiceExt};
    /// use leaparray_tower::{RateLimitLayer, ResponseFuture};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let layer = RateLimitLayer::builder().global("g", 1, Duration::from_secs(60)).build().unwrap();
    /// let mut svc = layer.layer(tower::service_fn(|_req: http::Request<()>| async {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
    /// }));
    /// let f: ResponseFuture<_, String, _> = svc.ready().await.unwrap().call(http::Request::new(()));
    /// assert_eq!(f.await.unwrap().headers()["ratelimit"], "\"g\";r=0;t=60");
    /// # }
    /// ```
    pub struct ResponseFuture<F, B, E> {
        #[pin]
        state: State<F, B, E>,
    }
}

impl<F, B, E> std::fmt::Debug for ResponseFuture<F, B, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Admitted { .. } => "Admitted",
            State::Ready { .. } => "Ready",
            State::Waiting { .. } => "Waiting",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, B, E> {
        Admitted {
            #[pin]
            inner: F,
            // Taken when it is ready.
            fields: Option<Fields>,
        },
        Ready {
            response: Option<Response<B>>,
        },
        Waiting {
            future: BoxFuture<Response<B>, E>,
        },
    }
}

impl<F, B, E> Future for ResponseFuture<F, B, E>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { inner, fields } => {
                if fields.is_none() {
                    return inner.poll(cx);
                }
                let mut out = ready!(inner.poll(cx));
                if let (Ok(resp), Some(fields)) = (&mut out, fields.take()) {
                    fields.stamp(resp.headers_mut());
                }
                Poll::Ready(out)
            }
            // Polled again after `Ready`: a bug of the caller's; the
            // default response rather than a panic.
            StateProj::Ready { response } => Poll::Ready(Ok(response.take().unwrap_or_default())),
            StateProj::Waiting { future } => future.as_mut().poll(cx),
        }
    }
}

async fn admitted<S, B, ResBody>(
    mut inner: S,
    req: Request<B>,
    shared: Arc<Shared>,
    key: Option<u64>,
    now: u64,
    left: Option<Headroom>,
) -> Result<Response<ResBody>, S::Error>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
{
    // The fields of the decision's time, as on the direct path: not of
    // when the handler answers.
    let fields = shared.admitted(key, now, left);
    let mut resp = inner.call(req).await?;
    if let Some(fields) = fields {
        fields.stamp(resp.headers_mut());
    }
    Ok(resp)
}

/// Sleeps until the retry time, tries again; refuses when the next wait
/// would be longer than `max_delay`. Holds `_slot` (one of the bounded
/// places) until it returns or is dropped.
async fn waiting<S, B, ResBody>(
    inner: S,
    mut req: Request<B>,
    shared: Arc<Shared>,
    key: Option<u64>,
    mut retry: u64,
    max_delay: Duration,
    _slot: crate::limits::WaitSlot,
) -> Result<Response<ResBody>, S::Error>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    ResBody: Default,
{
    loop {
        // At least 1 µs: a retry of 0 (room came back meanwhile) retries
        // after a tick rather than spinning.
        tokio::time::sleep(Duration::from_micros(retry.max(1))).await;
        let now = shared.now();
        match shared.decide(key, now) {
            Ok(left) => {
                if shared.admission {
                    req.extensions_mut().insert(Admission { now });
                }
                return admitted(inner, req, shared, key, now, left).await;
            }
            Err(next) if u128::from(next) <= max_delay.as_micros() => retry = next,
            Err(next) => return Ok(shared.refusal(key, now, next)),
        }
    }
}
